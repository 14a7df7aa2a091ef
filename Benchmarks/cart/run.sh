#!/usr/bin/env bash
# Cart benchmark: CartService's durable writes (PUT .../cart/items/{sku}, one SQLite transaction
# plus its cart.changed outbox row each; concurrent writes commit together) and reads (GET
# .../cart) on many carts, the writer alone without HTTP (grocer-bench-cart-store), and in the
# same run StockService's stock lookup as the yardstick for reads. Builds nothing: `make bench`
# builds the release binaries first. `cart.changed` is off by default in CartService; the writes
# are measured with it on (GROCER_CART_CHANGED_EVENTS=1), the dearer case.
#
# Environment (all optional):
#   BENCH_CONNECTIONS   64            BENCH_DURATION 10s        BENCH_THREADS 2
#   BENCH_CART_PORT     18082         BENCH_STOCK_PORT 18081    BENCH_HUB h1
#   BENCH_USERS         1000 (users, one cart each; their tokens are made before the run)
#   BENCH_SKUS          10   (writes pick among p00001 ... p<SKUS>, so a cart holds at most SKUS
#                            lines: 10 is a typical basket; 200 lets carts grow with the run)
#   BENCH_LOG_LEVEL     the services' GROCER_LOG_LEVEL (default warning)
#   BENCH_READY_TIMEOUT seconds to wait for the catalogue to reach CartService (default 120)
#   GROCER_BIN_DIR      where cart-service, stock-service and grocer-token are (default .build/release)
#   GROCER_RABBITMQ_SCRIPT  the broker script (default deploy/local/rabbitmq.sh; started or reused)
set -euo pipefail
LOG_PREFIX=cart-bench
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

CONNECTIONS="${BENCH_CONNECTIONS:-64}"
DURATION="${BENCH_DURATION:-10s}"
THREADS="${BENCH_THREADS:-2}"
CART_PORT="${BENCH_CART_PORT:-18082}"
STOCK_PORT="${BENCH_STOCK_PORT:-18081}"
HUB="${BENCH_HUB:-h1}"
USERS="${BENCH_USERS:-1000}"
SKUS="${BENCH_SKUS:-10}"
LEVEL="${BENCH_LOG_LEVEL:-warning}"
READY_TIMEOUT="${BENCH_READY_TIMEOUT:-120}"
LAST_SKU=p03000 # the demo assortment's SKUs are p00001 ... p03000

for tool in wrk curl; do
  command -v "$tool" >/dev/null || die "$tool is not installed (make deps)"
done
for bin in cart-service stock-service grocer-token; do
  [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin is missing (make bench builds it)"
done
[[ "$CONNECTIONS" =~ ^[0-9]+$ ]] || die "BENCH_CONNECTIONS must be one number, not '$CONNECTIONS'"
port_answers "$CART_PORT" && die "port $CART_PORT is taken"
port_answers "$STOCK_PORT" && die "port $STOCK_PORT is taken"

WORK="$(mktemp -d /tmp/grocer-bench-cart.XXXXXX)"
CART_PID=""
STOCK_PID=""
stop() { # pid
  [[ -n "$1" ]] || return 0
  if alive "$1"; then terminate "$1" 15; fi
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop "$CART_PID"
  stop "$STOCK_PID"
  bench_vhost_drop
  if ((rc == 0)); then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
}
trap cleanup EXIT

bash "$RABBITMQ_SCRIPT" start
bench_vhost_make cart-bench

# --- CartService first, so its queue is bound before StockService's demo events go out.
mkdir -p "$WORK/cart" "$WORK/stock"
log "starting cart-service on port $CART_PORT (data $WORK/cart)"
GROCER_SERVICE_NAME=cart-bench GROCER_CART_CHECKOUT_QUEUE=cart-bench.checkout GROCER_QUEUE_EXPIRES=600 \
  GROCER_CART_CHANGED_EVENTS=1 GROCER_CATALOGUE_QUEUE=stock-bench.catalogue GROCER_DATA_DIR="$WORK/cart" \
  GROCER_HTTP_PORT="$CART_PORT" GROCER_LOG_LEVEL="$LEVEL" \
  "$BIN_DIR/cart-service" >>"$WORK/cart.log" 2>&1 </dev/null &
CART_PID=$!
wait_http_ok "http://127.0.0.1:$CART_PORT/health/ready" 60 "$CART_PID" ||
  { tail -n 20 "$WORK/cart.log" >&2; die "cart-service did not become ready"; }

stock_env=(GROCER_SERVICE_NAME=stock-bench GROCER_RESERVATION_QUEUE=stock-bench.reservations GROCER_CATALOGUE_QUEUE=stock-bench.catalogue GROCER_QUEUE_EXPIRES=600
  GROCER_DATA_DIR="$WORK/stock" GROCER_HTTP_PORT="$STOCK_PORT" GROCER_LOG_LEVEL="$LEVEL")
log "loading the demo assortment into $WORK/stock"
env "${stock_env[@]}" "$BIN_DIR/stock-service" load-demo >>"$WORK/stock.log" 2>&1 </dev/null ||
  { tail -n 20 "$WORK/stock.log" >&2; die "stock-service load-demo failed"; }
log "starting stock-service on port $STOCK_PORT"
env "${stock_env[@]}" "$BIN_DIR/stock-service" >>"$WORK/stock.log" 2>&1 </dev/null &
STOCK_PID=$!
wait_http_ok "http://127.0.0.1:$STOCK_PORT/health/ready" 60 "$STOCK_PID" ||
  { tail -n 20 "$WORK/stock.log" >&2; die "stock-service did not become ready"; }

# --- Tokens: one user (and cart) each, made in parallel.
log "making $USERS tokens"
# shellcheck disable=SC2016 # $1 and $2 belong to the inner shell
seq -f 'bench-u%04g' 1 "$USERS" |
  xargs -P "$(nproc)" -I{} sh -c '"$1" "$2" | tail -n 1' _ "$BIN_DIR/grocer-token" {} >"$WORK/tokens.txt"
[[ "$(grep -c . "$WORK/tokens.txt")" == "$USERS" ]] || die "grocer-token made $(grep -c . "$WORK/tokens.txt") of $USERS tokens"
TOKEN="$(head -n 1 "$WORK/tokens.txt")"

# --- Wait until the catalogue has reached CartService: the hub (GET 200), then its last product.
CART_URL="http://127.0.0.1:$CART_PORT/v1/hubs/$HUB/cart"
status() { curl -s -o "$WORK/last.json" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $TOKEN" "$@" 2>/dev/null || true; }
deadline=$((SECONDS + READY_TIMEOUT))
code=""
until [[ "$(status "$CART_URL")" == 200 ]]; do
  alive "$CART_PID" || { tail -n 20 "$WORK/cart.log" >&2; die "cart-service exited"; }
  ((SECONDS < deadline)) || die "hub $HUB did not reach cart-service within ${READY_TIMEOUT}s: $(head -c 200 "$WORK/last.json")"
  sleep 0.5
done
until code="$(status -X PUT -H 'Content-Type: application/json' -d '{"quantity":1}' "$CART_URL/items/$LAST_SKU")"; [[ "$code" == 200 ]]; do
  alive "$CART_PID" || { tail -n 20 "$WORK/cart.log" >&2; die "cart-service exited"; }
  ((SECONDS < deadline)) || die "$LAST_SKU did not reach cart-service within ${READY_TIMEOUT}s ($code: $(head -c 200 "$WORK/last.json"))"
  sleep 0.5
done
status -X PUT -H 'Content-Type: application/json' -d '{"quantity":0}' "$CART_URL/items/$LAST_SKU" >/dev/null
log "catalogue arrived at cart-service after ${SECONDS}s of this run"

# --- The stock lookup's requests: the same 200 lists of 20 ids as Benchmarks/stock-lookup, warmed.
awk -v hub="$HUB" 'BEGIN {
  for (i = 0; i < 200; i++) {
    line = "/v1/hubs/" hub "/stock?ids="
    for (j = 0; j < 20; j++) line = line (j ? "," : "") sprintf("p%05d", (i * 37 + j * 151) % 3000 + 1)
    print line
  }
}' >"$WORK/stock-paths.txt"
urls=()
while IFS= read -r path; do urls+=(-o /dev/null "http://127.0.0.1:$STOCK_PORT$path"); done <"$WORK/stock-paths.txt"
bad="$(curl -sg -H "Authorization: Bearer $TOKEN" -w '%{http_code}\n' "${urls[@]}" | grep -cvx 200 || true)"
((bad == 0)) || die "$bad of 200 stock lookups did not answer 200"

metric_sum() { # sum of the cart-service metric lines whose name starts with $1
  curl -s --max-time 5 "http://127.0.0.1:$CART_PORT/metrics" 2>/dev/null |
    awk -v m="$1" 'index($1, m) == 1 { s += $NF } END { printf "%d", s }'
}

# --- Measure.
declare -A RESULT
run_wrk() { # name port script args...
  local name=$1 port=$2 script=$3 out line
  shift 3
  out="$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --timeout 5s -s "$script" \
    "http://127.0.0.1:$port" -- "$@" 2>&1)" || { echo "$out" >&2; die "wrk failed"; }
  line="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
  [[ -n "$line" ]] || { echo "$out" >&2; die "no RESULT from wrk"; }
  RESULT[$name]="$line"
  printf '%-7s c=%-4s %s\n' "$name" "$CONNECTIONS" "${line#RESULT }"
}
field() { sed -n "s/.*[ ]$2=\([0-9]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }

# The writer alone (no HTTP, no broker): what one database writer can commit per second.
STORE_RESULT=""
if [[ -x "$BIN_DIR/grocer-bench-cart-store" ]]; then
  STORE_RESULT="$("$BIN_DIR/grocer-bench-cart-store" 20000 "$WORK/store" "$SKUS" | grep '^RESULT ' | tail -n 1 || true)"
  echo "store   ${STORE_RESULT#RESULT }"
fi

echo "cart: $(nproc) cores, wrk -t$THREADS -c$CONNECTIONS -d$DURATION, $USERS users, writes over $SKUS SKUs at $HUB"
PUBLISHED_BEFORE="$(metric_sum outbox_published_total)"
run_wrk writes "$CART_PORT" "$HERE/cart.lua" write "$WORK/tokens.txt" "$HUB" "$SKUS"
RSS_KB="$(awk '/^VmRSS:/ { print $2 }' "/proc/$CART_PID/status")"
BACKLOG_AT_END="$(metric_sum outbox_backlog)"
for _ in $(seq 1 100); do [[ "$(metric_sum outbox_backlog)" == 0 ]] && break; sleep 0.1; done
PUBLISHED=$(($(metric_sum outbox_published_total) - PUBLISHED_BEFORE))
BACKLOG="$(metric_sum outbox_backlog)"
sleep 1
run_wrk reads "$CART_PORT" "$HERE/cart.lua" read "$WORK/tokens.txt" "$HUB"
sleep 1
run_wrk stock "$STOCK_PORT" "$HERE/../stock-lookup/ids.lua" "$WORK/stock-paths.txt" "$TOKEN"
RSS_AFTER_KB="$(awk '/^VmRSS:/ { print $2 }' "/proc/$CART_PID/status")"
alive "$CART_PID" || die "cart-service died during the run"
CART_LOG_LINES="$(grep -c . "$WORK/cart.log" || true)"

# --- Summary.
ms() { awk -v us="$1" 'BEGIN { printf (us == "" ? "-" : sprintf("%.2f", us / 1000)) }'; }
echo
echo "Summary (targets: writes >= 5000/s with p99 < 20 ms; reads >= 0.5 x stock lookups/s)"
printf '%-7s %10s %9s %9s %9s %10s %8s\n' what "req/s" "p50 ms" "p99 ms" "max ms" requests errors
for name in writes reads stock; do
  errors=$(($(field "$name" non2xx) + $(field "$name" socket_errors)))
  printf '%-7s %10s %9s %9s %9s %10s %8s\n' "$name" "$(field "$name" rps)" "$(ms "$(field "$name" p50_us)")" \
    "$(ms "$(field "$name" p99_us)")" "$(ms "$(field "$name" max_us)")" "$(field "$name" requests)" "$errors"
done
w_rps="$(field writes rps)"; r_rps="$(field reads rps)"; s_rps="$(field stock rps)"; w_p99="$(field writes p99_us)"
ratio="$(awk -v r="$r_rps" -v s="$s_rps" 'BEGIN { printf (s > 0 ? sprintf("%.2f", r / s) : "-") }')"
echo "reads / stock lookups: $ratio"
if [[ -n "$STORE_RESULT" ]]; then
  echo "writer alone (grocer-bench-cart-store, 20,000 writes, no HTTP): $(sed -n 's/.*writes_per_s=\([0-9]*\).*/\1/p' <<<"$STORE_RESULT") writes/s"
fi
echo "cart-service RSS: $((RSS_KB / 1024)) MB after the writes ($RSS_KB kB), $((RSS_AFTER_KB / 1024)) MB at the end; $CART_LOG_LINES log lines at $LEVEL"
echo "cart.changed published by the outbox during the writes (includes PUTs in flight when wrk stopped): $PUBLISHED (backlog $BACKLOG_AT_END when wrk stopped, $BACKLOG a moment later)"
if ((CART_LOG_LINES > 0)); then
  echo "cart-service log (first lines):"
  head -n 5 "$WORK/cart.log" | cut -c 1-240 | sed 's/^/  /'
fi

verdict() { if awk "BEGIN { exit !($2) }"; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
echo "Targets:"
verdict "writes/s $w_rps >= 5000" "$w_rps >= 5000"
verdict "write p99 $(ms "$w_p99") ms < 20 ms" "$w_p99 < 20000"
verdict "reads/s $r_rps >= 0.5 x stock lookups/s $s_rps" "$r_rps >= 0.5 * $s_rps"
verdict "writes and reads without errors" "$(($(field writes non2xx) + $(field writes socket_errors) + $(field reads non2xx) + $(field reads socket_errors))) == 0"
