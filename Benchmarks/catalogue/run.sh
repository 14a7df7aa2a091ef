#!/usr/bin/env bash
# Catalogue benchmark: the app's first screens on StockService against nginx serving the same
# bytes, side by side in one run, on three workloads as the app makes them:
#   screens  the home (anonymous) and every category's first three pages (cursor pages too)
#   areas    address to hub, random points around Berlin among 100 hubs' 16-gon areas
#   search   3,000 products, prefixes of words of their names, one or two words
#   edits    the screens while staff rename a product every BENCH_EDIT_SECONDS (each change drops
#            the hub's snapshot, which the next requests wait for: one build shared by them)
# nginx serves each reply's exact bytes from a file (same order, same sizes). Builds nothing:
# `make bench` builds the release binaries first.
#
# Environment (all optional):
#   BENCH_CONNECTIONS  64     BENCH_DURATION 10s (per target and workload, over all rounds)
#   BENCH_ROUNDS       2      BENCH_THREADS 2    BENCH_WORKLOADS "screens areas search edits"
#   BENCH_EDIT_SECONDS 1      seconds between the product changes of the edits workload
#   BENCH_SERVICE_PORT 18083  BENCH_NGINX_PORT 18093   BENCH_HUB h1
#   GROCER_BIN_DIR     where stock-service and grocer-token are (default .build/release)
#   GROCER_RABBITMQ_SCRIPT  the broker script (default deploy/local/rabbitmq.sh; started or reused)
set -euo pipefail
LOG_PREFIX=catalogue
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

CONNECTIONS="${BENCH_CONNECTIONS:-64}"
DURATION="${BENCH_DURATION:-10s}"
ROUNDS="${BENCH_ROUNDS:-2}"
THREADS="${BENCH_THREADS:-2}"
WORKLOADS="${BENCH_WORKLOADS:-screens areas search edits}"
EDIT_SECONDS="${BENCH_EDIT_SECONDS:-1}"
SERVICE_PORT="${BENCH_SERVICE_PORT:-18083}"
NGINX_PORT="${BENCH_NGINX_PORT:-18093}"
HUB="${BENCH_HUB:-h1}"
LOOKUP="$HERE/../stock-lookup"

for tool in wrk nginx curl python3; do
  command -v "$tool" >/dev/null || die "$tool is not installed (make deps)"
done
BIN="$BIN_DIR/stock-service"
[[ -x "$BIN" && -x "$BIN_DIR/grocer-token" ]] || die "$BIN_DIR lacks stock-service or grocer-token (make build)"
port_answers "$SERVICE_PORT" && die "port $SERVICE_PORT is taken"
port_answers "$NGINX_PORT" && die "port $NGINX_PORT is taken"

WORK="$(mktemp -d /tmp/grocer-bench-catalogue.XXXXXX)"
chmod 755 "$WORK"
SERVICE_PID=""
cleanup() {
  local rc=$?
  if [[ -n "$SERVICE_PID" ]] && alive "$SERVICE_PID"; then terminate "$SERVICE_PID" 15; fi
  if [[ -n "$SERVICE_PID" ]]; then wait "$SERVICE_PID" 2>/dev/null || true; fi
  bench_nginx_stop
  bench_vhost_drop
  if ((rc == 0)); then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
}
trap cleanup EXIT

# --- StockService: the demo assortment and 100 more hubs with areas.
bash "$RABBITMQ_SCRIPT" start
bench_vhost_make catalogue-bench
SERVICE_ENV=(GROCER_SERVICE_NAME=catalogue-bench GROCER_RESERVATION_QUEUE=catalogue-bench.reservations
  GROCER_CATALOGUE_QUEUE=catalogue-bench.catalogue GROCER_QUEUE_EXPIRES=600 GROCER_DATA_DIR="$WORK/data"
  GROCER_HTTP_PORT="$SERVICE_PORT" GROCER_LOG_LEVEL="${BENCH_LOG_LEVEL:-warning}")
mkdir -p "$WORK/data"
env "${SERVICE_ENV[@]}" "$BIN" load-demo >>"$WORK/service.log" 2>&1 </dev/null ||
  { tail -n 20 "$WORK/service.log" >&2; die "load-demo failed"; }
env "${SERVICE_ENV[@]}" "$BIN" >>"$WORK/service.log" 2>&1 </dev/null &
SERVICE_PID=$!
BASE="http://127.0.0.1:$SERVICE_PORT"
wait_http_ok "$BASE/health/ready" 60 "$SERVICE_PID" || { tail -n 20 "$WORK/service.log" >&2; die "stock-service did not become ready"; }

STAFF="$("$BIN_DIR/grocer-token" bench-staff --role staff --hubs '*' | tail -n 1)"
python3 "$HERE/workload.py" areas 100 2026 "$WORK/areas.tsv"
HUB_BODY='{"hours":{"timeZone":"Europe/Berlin","weekly":[]},"pricing":{"minimumOrder":{"minorUnits":1000,"currency":"EUR"},"deliveryFee":{"minorUnits":199,"currency":"EUR"},"freeDeliveryFrom":{"minorUnits":3500,"currency":"EUR"},"smallBasket":{"below":{"minorUnits":1500,"currency":"EUR"},"fee":{"minorUnits":150,"currency":"EUR"}}}}'
while IFS=$'\t' read -r hub area; do
  for put in "$hub $HUB_BODY" "$hub/delivery-area $area"; do
    code="$(curl -s -o "$WORK/put.json" -w '%{http_code}' -X PUT -H "Authorization: Bearer $STAFF" \
      -H 'Content-Type: application/json' -d "${put#* }" "$BASE/v1/hubs/${put%% *}")"
    [[ "$code" == 20? ]] || die "PUT /v1/hubs/${put%% *} answered $code: $(head -c 300 "$WORK/put.json")"
  done
done <"$WORK/areas.tsv"
log "100 more hubs with delivery areas"

python3 "$HERE/workload.py" screens "$BASE" "$HUB" "$WORK/screens.paths"
cp "$WORK/screens.paths" "$WORK/edits.paths"
python3 "$HERE/workload.py" points 2000 7 "$WORK/areas.paths"
python3 "$HERE/workload.py" queries "$BASE" "$HUB" 400 11 "$WORK/search.paths"

# --- nginx: every reply's bytes in a file, requested in the same order.
NGINX_DIR="$WORK/nginx"
mkdir -p "$NGINX_DIR/html/r"
chmod -R 755 "$NGINX_DIR"
for workload in $WORKLOADS; do
  mkdir -p "$NGINX_DIR/html/r/$workload"
  python3 "$HERE/workload.py" capture "$BASE" "$WORK/$workload.paths" "$NGINX_DIR/html/r/$workload" "$WORK/$workload.nginx"
  sed -i "s|^/r/|/r/$workload/|" "$WORK/$workload.nginx"
  chmod 644 "$NGINX_DIR/html/r/$workload"/*
done
bench_nginx_start "$NGINX_DIR" "$NGINX_PORT" "root $NGINX_DIR/html; open_file_cache max=4096;"
FIRST_WORKLOAD="${WORKLOADS%% *}"
wait_http_ok "http://127.0.0.1:$NGINX_PORT/r/$FIRST_WORKLOAD/0.json" 10 "$NGINX_PID" || die "nginx did not start"

# --- Measure: per workload and connection count, rounds taking turns.
declare -A RESULT
cpu_ticks() { local total=0 pid; for pid in "$@"; do
  total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0))); done; echo "$total"; }
target_pids() { if [[ "$1" == service ]]; then echo "$SERVICE_PID"; else pgrep -P "$NGINX_PID" | tr '\n' ' '; fi; }
# Staff rename the first product of the screens' hub every EDIT_SECONDS until killed: a
# catalogue change each time, so the hub's snapshot is dropped and built again under load.
edit_products() {
  local product body n=0
  product="$(curl -s "$BASE/v1/hubs/$HUB/products/p00001")"
  while true; do
    n=$((n + 1))
    body="$(python3 -c 'import json, sys
p = json.loads(sys.argv[1])
for key in ("sku", "available"): p.pop(key, None)
p["name"] = p["name"] + " " + sys.argv[2]
print(json.dumps(p))' "$product" "$n")"
    curl -s -o /dev/null -X PUT -H "Authorization: Bearer $STAFF" -H 'Content-Type: application/json' \
      -d "$body" "$BASE/v1/hubs/$HUB/products/p00001"
    echo "$n" >"$WORK/edits.count"
    sleep "$EDIT_SECONDS"
  done
}
run_round() { # workload target connections
  local port=$SERVICE_PORT paths="$WORK/$1.paths" out pids before after line editor=""
  if [[ "$2" == nginx ]]; then port=$NGINX_PORT; paths="$WORK/$1.nginx"; fi
  if [[ "$1" == edits && "$2" == service ]]; then
    edit_products &
    editor=$!
  fi
  pids="$(target_pids "$2")"
  # shellcheck disable=SC2086
  before="$(cpu_ticks $pids)"
  out="$(wrk -t"$THREADS" -c"$3" -d"${ROUND_SECONDS}s" --timeout 5s -s "$LOOKUP/ids.lua" \
    "http://127.0.0.1:$port" -- "$paths" 2>&1)" || { echo "$out" >&2; die "wrk failed"; }
  if [[ -n "$editor" ]]; then
    kill "$editor" 2>/dev/null || true
    wait "$editor" 2>/dev/null || true
    EDITS=$((EDITS + $(cat "$WORK/edits.count" 2>/dev/null || echo 0)))
  fi
  line="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
  [[ -n "$line" ]] || { echo "$out" >&2; die "no RESULT from wrk"; }
  # shellcheck disable=SC2086
  after="$(cpu_ticks $pids)"
  { echo "$line cpu_ticks=$((after - before)) steal_ticks=0"; grep '^QUANTILES ' <<<"$out" | tail -n 1; } >>"$WORK/rounds.$1.$2.$3"
}
finish() { # workload target connections
  local line requests ticks
  line="$(python3 "$LOOKUP/merge_rounds.py" <"$WORK/rounds.$1.$2.$3")" || die "merging $1 $2 c=$3 failed"
  requests="$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$line")"
  ticks="$(sed -n 's/.* cpu_ticks=\([0-9]*\).*/\1/p' <<<"$line")"
  line="$line cpu_ns_per_request=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" -v n="$requests" \
    'BEGIN { printf "%d", (n > 0 ? t * 1000000000 / hz / n : 0) }')"
  RESULT[$1:$2:$3]="$line"
}
field() { sed -n "s/.*[ ]$2=\([0-9]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }

TOTAL_SECONDS="${DURATION%s}"
EDITS=0
ROUND_SECONDS=$(((TOTAL_SECONDS + ROUNDS - 1) / ROUNDS))
echo "catalogue: $(nproc) cores, wrk -t$THREADS, $ROUNDS rounds of ${ROUND_SECONDS}s per target taking turns;" \
  "$(sort -u "$WORK/screens.paths" | wc -l) screen paths, $(wc -l <"$WORK/areas.paths") points among 103 hubs," \
  "$(sort -u "$WORK/search.paths" | wc -l) queries over $(grep -c . "$WORK/areas.tsv" >/dev/null; echo 3000) products"
for workload in $WORKLOADS; do
  for c in $CONNECTIONS; do
    for round in $(seq 1 "$ROUNDS"); do
      if ((round % 2 == 1)); then order="service nginx"; else order="nginx service"; fi
      for target in $order; do run_round "$workload" "$target" "$c"; done
    done
    finish "$workload" service "$c"
    finish "$workload" nginx "$c"
  done
done

echo
printf '%-8s %-5s %11s %8s %8s %11s %8s %8s %6s %9s %9s %s\n' workload conns "service r/s" "p50 ms" "p99 ms" \
  "nginx r/s" "p50 ms" "p99 ms" ratio "svc cpu" "ngx cpu" errors
for workload in $WORKLOADS; do
  for c in $CONNECTIONS; do
    s="$workload:service:$c"; n="$workload:nginx:$c"
    awk -v w="$workload" -v c="$c" -v sr="$(field "$s" rps)" -v s50="$(field "$s" p50_us)" -v s99="$(field "$s" p99_us)" \
      -v nr="$(field "$n" rps)" -v n50="$(field "$n" p50_us)" -v n99="$(field "$n" p99_us)" \
      -v sc="$(field "$s" cpu_ns_per_request)" -v nc="$(field "$n" cpu_ns_per_request)" \
      -v err="$(($(field "$s" non2xx) + $(field "$s" socket_errors)))" \
      'function ms(us) { return sprintf("%.2f", us / 1000) }
      BEGIN { printf "%-8s %-5s %11s %8s %8s %11s %8s %8s %6.2f %6.1f us %6.1f us %s\n", w, c, sr, ms(s50), ms(s99), nr,
        ms(n50), ms(n99), (nr > 0 ? sr / nr : 0), sc / 1000, nc / 1000, err }'
  done
done
echo "(cpu: CPU time each server used per answered request; ratio: service requests/s over nginx's)"
echo "service RSS after the run: $(($(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVICE_PID/status") / 1024)) MB"

verdict() { if awk "BEGIN { exit !($2) }"; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
echo "Targets:"
for c in $CONNECTIONS; do
  for workload in $WORKLOADS; do
    s="$workload:service:$c"; n="$workload:nginx:$c"
    sr="$(field "$s" rps)"; nr="$(field "$n" rps)"; p99="$(field "$s" p99_us)"
    errors=$(($(field "$s" non2xx) + $(field "$s" socket_errors)))
    verdict "$workload c=$c every answer 200 ($errors errors)" "$errors == 0"
    case "$workload" in
      screens)
        verdict "screens c=$c requests/s $sr >= 0.8 x nginx $nr" "$sr >= 0.8 * $nr"
        verdict "screens c=$c p99 $(awk -v u="$p99" 'BEGIN { printf "%.2f", u / 1000 }') ms < 5 ms" "$p99 < 5000" ;;
      areas)
        verdict "areas c=$c p99 $(awk -v u="$p99" 'BEGIN { printf "%.2f", u / 1000 }') ms < 5 ms (100 hubs' areas)" "$p99 < 5000" ;;
      search)
        verdict "search c=$c p99 $(awk -v u="$p99" 'BEGIN { printf "%.2f", u / 1000 }') ms < 20 ms (3,000 products)" "$p99 < 20000" ;;
      edits)
        # Reported, not judged: requests that come while the snapshot is rebuilt wait for it.
        echo "  (edits c=$c: $EDITS product changes, one every ${EDIT_SECONDS}s; $sr requests/s," \
          "$(awk -v s="$sr" -v b="$(field "screens:service:$c" rps)" 'BEGIN { if (b > 0) printf "%.2f", s / b; else printf "-" }')x the" \
          "screens' without edits; p99 $(awk -v u="$p99" 'BEGIN { printf "%.2f", u / 1000 }') ms)" ;;
    esac
  done
done
