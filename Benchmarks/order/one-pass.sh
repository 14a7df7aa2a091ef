#!/usr/bin/env bash
# Order benchmark: end-to-end `POST /v1/orders` against real processes — OrderService asks
# CartService for the priced cart at the sent version and StockService for the reservation (both
# over RabbitMQ request/reply), charges the simulated provider, confirms, and publishes
# order.confirmed (the stock commits, the cart empties). Every order is a fresh, prepared cart of
# its own user with a unique Idempotency-Key. Two runs: an open-loop fixed rate (default 100
# orders/s; latency from the moment each order was due) and full speed (wrk, closed loop). Then
# the confirmed orders and charges are counted in OrderService's databases, a sample of carts is
# checked empty, and StockService's stock lookup in the same run is the yardstick.
# One pass on one engine; `run.sh` runs the passes side by side. Builds nothing: `make bench`
# builds the release binaries first.
#
# Environment (all optional):
#   BENCH_DB              sqlite (files in the work folder) or postgres (fresh databases on the
#                         local cluster, deploy/local/postgres.sh; dropped at the end)
#   BENCH_ORDER_REPLICAS  1      OrderService processes (more than one needs postgres): replica k
#                                on BENCH_ORDER_PORT + 100 (k - 1), nginx in front on
#                                BENCH_ORDER_FRONT_PORT (18150) spreading the orders
#   BENCH_RATE            100    orders/s of the fixed-rate run    BENCH_RATE_SECONDS 10
#   BENCH_FULL_ORDERS     6000   carts prepared for each full-speed run (it ends when they are used
#                                up or after BENCH_FULL_DURATION, 30s, whichever comes first)
#   BENCH_CONNECTIONS     "32 64 128"  wrk connections of the full-speed runs, one run each; full
#                                speed is the best of them      BENCH_THREADS 2
#   BENCH_HUB             h3     (the demo hub open around the clock; h1/h2 close at night)
#   BENCH_LINES           3      lines per cart (quantity 1 each, SKUs priced 4-20 EUR: always
#                                above the demo minimum order of 10 EUR)
#   BENCH_SKUS            40     distinct SKUs the carts use (their counts are raised first)
#   BENCH_STOCK_PORT 18181  BENCH_CART_PORT 18182  BENCH_ORDER_PORT 18183
#   BENCH_LOG_LEVEL       the services' GROCER_LOG_LEVEL (default warning)
#   BENCH_KEEP            1 keeps the work folder (logs, databases; PostgreSQL's too) after a successful run
#   BENCH_TRACE           a file: the fixed-rate run writes one line per order there (when it
#                         was due in seconds from the start, latency in ms, status)
#   BENCH_READY_TIMEOUT   seconds to wait for the catalogue and counts to reach CartService (120)
#   GROCER_BIN_DIR        where the services and grocer-token are (default .build/release)
#   GROCER_RABBITMQ_SCRIPT  the broker script (default deploy/local/rabbitmq.sh; started or reused)
#   GROCER_BROKER         cluster: the services on rabbitmq.sh's cluster (its nodes in
#                         GROCER_AMQP_URLS; GROCER_RABBITMQ_CLUSTER_NAME/_PORT name it), the
#                         broker's CPU summed over its three nodes
# Needs wrk, curl, sqlite3 (or psql), nginx for replicas, python3 (standard library only).
# Its last line is machine-readable: PASS engine=… replicas=… full_rps=… rate_p99_ms=… cpu_*=…
set -euo pipefail
LOG_PREFIX=order-bench
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

RATE="${BENCH_RATE:-100}"
RATE_SECONDS="${BENCH_RATE_SECONDS:-10}"
FULL_ORDERS="${BENCH_FULL_ORDERS:-6000}"
FULL_DURATION="${BENCH_FULL_DURATION:-30s}"
# A closed loop measures capacity only once enough orders are in flight: at 32 connections the
# services and the broker still idle between small batches (commits, confirms, acks), and every
# batch costs about as much CPU as a bigger one. Each level gets carts of its own.
CONNECTIONS="${BENCH_CONNECTIONS:-32 64 128}"
THREADS="${BENCH_THREADS:-2}"
HUB="${BENCH_HUB:-h3}"
LINES="${BENCH_LINES:-3}"
SKUS="${BENCH_SKUS:-40}"
STOCK_PORT="${BENCH_STOCK_PORT:-18181}"
CART_PORT="${BENCH_CART_PORT:-18182}"
ORDER_PORT="${BENCH_ORDER_PORT:-18183}"
LEVEL="${BENCH_LOG_LEVEL:-warning}"
READY_TIMEOUT="${BENCH_READY_TIMEOUT:-120}"
HELPER="$HERE/order_bench.py"
ENGINE="${BENCH_DB:-sqlite}"
REPLICAS="${BENCH_ORDER_REPLICAS:-1}"
FRONT_PORT="${BENCH_ORDER_FRONT_PORT:-18150}"
POSTGRES_SCRIPT="$HERE/../../deploy/local/postgres.sh"
[[ "$ENGINE" == sqlite || "$ENGINE" == postgres ]] || die "BENCH_DB must be sqlite or postgres"
[[ "$REPLICAS" =~ ^[1-3]$ ]] || die "BENCH_ORDER_REPLICAS must be 1 to 3"
((REPLICAS == 1)) || [[ "$ENGINE" == postgres ]] || die "several OrderService replicas need BENCH_DB=postgres"

tools=(wrk curl python3)
if [[ "$ENGINE" == sqlite ]]; then tools+=(sqlite3); else tools+=(psql); fi
((REPLICAS == 1)) || tools+=(nginx)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null || die "$tool is not installed"
done
for bin in stock-service cart-service order-service grocer-token; do
  [[ -x "$BIN_DIR/$bin" ]] || die "$BIN_DIR/$bin is missing (make bench builds it)"
done
read -ra LEVELS <<<"$CONNECTIONS"
((${#LEVELS[@]} > 0)) || die "BENCH_CONNECTIONS is empty"
for number in "$RATE" "$RATE_SECONDS" "$FULL_ORDERS" "${LEVELS[@]}" "$THREADS" "$LINES" "$SKUS"; do
  [[ "$number" =~ ^[0-9]+$ && "$number" -gt 0 ]] || die "'$number' is not a positive whole number"
done
ORDER_PORTS=()
for ((k = 0; k < REPLICAS; k++)); do ORDER_PORTS+=($((ORDER_PORT + 100 * k))); done
for port in "$STOCK_PORT" "$CART_PORT" "${ORDER_PORTS[@]}"; do
  port_answers "$port" && die "port $port is taken"
done
# Where the orders go: the one replica, or nginx in front of them.
ORDER_URL_PORT="$ORDER_PORT"
((REPLICAS == 1)) || ORDER_URL_PORT="$FRONT_PORT"
RATE_ORDERS=$((RATE * RATE_SECONDS))
USERS=$((RATE_ORDERS + FULL_ORDERS * ${#LEVELS[@]}))
RUN_ID="ob$(date +%s)" # in every Idempotency-Key and user id: keys never repeat across runs

WORK="$(mktemp -d /tmp/grocer-bench-order.XXXXXX)"
STOCK_PID=""
CART_PID=""
ORDER_PIDS=()
FRONT_PID=""
DATABASES=()
stop() { # pid
  [[ -n "$1" ]] || return 0
  if alive "$1"; then terminate "$1" 15; fi
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop "$FRONT_PID"
  for pid in "${ORDER_PIDS[@]}"; do stop "$pid"; done
  stop "$CART_PID"
  stop "$STOCK_PID"
  bench_vhost_drop
  if [[ -z "${BENCH_KEEP:-}" ]]; then
    for name in "${DATABASES[@]}"; do bash "$POSTGRES_SCRIPT" dropdb "$name" >/dev/null 2>&1 || true; done
  elif ((${#DATABASES[@]} > 0)); then
    log "kept the databases ${DATABASES[*]}"
  fi
  if ((rc == 0)) && [[ -z "${BENCH_KEEP:-}" ]]; then rm -rf "$WORK"; else log "kept $WORK for inspection"; fi
}
trap cleanup EXIT

bash "$RABBITMQ_SCRIPT" start

# --- A virtual host of this run alone: the events of 10,000 orders (stock.changed,
# order.confirmed) must not reach a `make run` system's queues on the same broker (its
# cart-service would spend a core applying them, and its data would change), nor theirs ours.
# Deleted at the end with everything in it. Queue names are ours too, and expire if left over.
bench_vhost_make order-bench
CATALOGUE_QUEUE=order-bench.catalogue
RESERVATION_QUEUE=order-bench.reservations
CHECKOUT_QUEUE=order-bench.cart-checkout
common_env=(GROCER_QUEUE_EXPIRES=600 GROCER_LOG_LEVEL="$LEVEL")

mkdir -p "$WORK/stock" "$WORK/cart" "$WORK/order"
# --- The engine: on PostgreSQL each service (and the simulated provider) a database of this run.
database_env() { :; }
if [[ "$ENGINE" == postgres ]]; then
  bash "$POSTGRES_SCRIPT" start
  for service in stock cart order payments; do
    DATABASES+=("${RUN_ID}_$service")
    bash "$POSTGRES_SCRIPT" createdb "${RUN_ID}_$service" >/dev/null
  done
  database_env() { # service: the GROCER_DATABASE_URL assignment for it
    echo "GROCER_DATABASE_URL=$(bash "$POSTGRES_SCRIPT" url "${RUN_ID}_$1")"
  }
fi
# CartService first, so its queue is bound before StockService's demo events go out.
log "starting cart-service on port $CART_PORT"
env "${common_env[@]}" $(database_env cart) GROCER_SERVICE_NAME=order-bench-cart GROCER_CATALOGUE_QUEUE="$CATALOGUE_QUEUE" \
  GROCER_CART_CHECKOUT_QUEUE="$CHECKOUT_QUEUE" GROCER_DATA_DIR="$WORK/cart" GROCER_HTTP_PORT="$CART_PORT" \
  "$BIN_DIR/cart-service" >>"$WORK/cart.log" 2>&1 </dev/null &
CART_PID=$!
wait_http_ok "http://127.0.0.1:$CART_PORT/health/ready" 60 "$CART_PID" ||
  { tail -n 20 "$WORK/cart.log" >&2; die "cart-service did not become ready"; }

stock_env=("${common_env[@]}" $(database_env stock) GROCER_SERVICE_NAME=order-bench-stock GROCER_RESERVATION_QUEUE="$RESERVATION_QUEUE"
  GROCER_CATALOGUE_QUEUE="$CATALOGUE_QUEUE" GROCER_DATA_DIR="$WORK/stock" GROCER_HTTP_PORT="$STOCK_PORT")
log "loading the demo assortment"
env "${stock_env[@]}" "$BIN_DIR/stock-service" load-demo >>"$WORK/stock.log" 2>&1 </dev/null ||
  { tail -n 20 "$WORK/stock.log" >&2; die "stock-service load-demo failed"; }
log "starting stock-service on port $STOCK_PORT"
env "${stock_env[@]}" "$BIN_DIR/stock-service" >>"$WORK/stock.log" 2>&1 </dev/null &
STOCK_PID=$!
wait_http_ok "http://127.0.0.1:$STOCK_PORT/health/ready" 60 "$STOCK_PID" ||
  { tail -n 20 "$WORK/stock.log" >&2; die "stock-service did not become ready"; }

order_env=("${common_env[@]}" GROCER_SERVICE_NAME=order-bench-order GROCER_CART_CHECKOUT_QUEUE="$CHECKOUT_QUEUE"
  GROCER_RESERVATION_QUEUE="$RESERVATION_QUEUE" GROCER_DATA_DIR="$WORK/order")
if [[ "$ENGINE" == postgres ]]; then
  order_env+=("$(database_env order)" "GROCER_PAYMENT_SIM_DATABASE_URL=$(bash "$POSTGRES_SCRIPT" url "${RUN_ID}_payments")")
fi
for k in "${!ORDER_PORTS[@]}"; do
  log "starting order-service replica $((k + 1)) on port ${ORDER_PORTS[k]}"
  env "${order_env[@]}" GROCER_HTTP_PORT="${ORDER_PORTS[k]}" GROCER_REPLICA_ID="order-bench-order-$((k + 1))" \
    "$BIN_DIR/order-service" >>"$WORK/order.log" 2>&1 </dev/null &
  ORDER_PIDS+=($!)
  wait_http_ok "http://127.0.0.1:${ORDER_PORTS[k]}/health/ready" 60 "${ORDER_PIDS[k]}" ||
    { tail -n 20 "$WORK/order.log" >&2; die "order-service did not become ready"; }
done
ORDER_PID="${ORDER_PIDS[0]}"
if ((REPLICAS > 1)); then
  # A plain round-robin front (the gateway's rate limits would measure themselves).
  mkdir -p "$WORK/nginx/logs"
  {
    echo "worker_processes 1; pid $WORK/nginx/nginx.pid; error_log $WORK/nginx/logs/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "http { access_log off; upstream orders { keepalive 256;"
    for port in "${ORDER_PORTS[@]}"; do echo "  server 127.0.0.1:$port;"; done
    echo "} server { listen 127.0.0.1:$FRONT_PORT; location / { proxy_pass http://orders;"
    echo "  proxy_http_version 1.1; proxy_set_header Connection \"\"; } } }"
  } >"$WORK/nginx/nginx.conf"
  nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -g 'daemon off;' >>"$WORK/nginx.log" 2>&1 </dev/null &
  FRONT_PID=$!
  wait_http_ok "http://127.0.0.1:$FRONT_PORT/health/ready" 20 "$FRONT_PID" || die "the nginx front did not start"
fi
orders_alive() { for pid in "${ORDER_PIDS[@]}"; do alive "$pid" || return 1; done; }

# --- Tokens: grocer-token makes the first (and the staff token); the others are the same token
# re-signed for their user (order_bench.py checks it reproduces grocer-token's exactly).
TEMPLATE="$("$BIN_DIR/grocer-token" "$RUN_ID-u000001" | tail -n 1)"
STAFF="$("$BIN_DIR/grocer-token" "$RUN_ID-staff" --role staff --hubs '*' | tail -n 1)"
python3 "$HELPER" tokens "$TEMPLATE" "$((USERS + 1))" "$RUN_ID-u" "$WORK/all-tokens.tsv"
# The last user only probes whether the raised counts have reached CartService.
PROBE_TOKEN="$(tail -n 1 "$WORK/all-tokens.tsv" | cut -f 2)"
head -n "$USERS" "$WORK/all-tokens.tsv" >"$WORK/tokens.tsv"

# --- The catalogue at CartService (the hub answers), then SKUs with counts for every order.
CART_URL="http://127.0.0.1:$CART_PORT/v1/hubs/$HUB/cart"
status() { # token curl-args...: prints the HTTP status, the body goes to $WORK/last.json
  local token=$1
  shift
  curl -s -o "$WORK/last.json" -w '%{http_code}' --max-time 5 -H "Authorization: Bearer $token" "$@" 2>/dev/null || true
}
deadline=$((SECONDS + READY_TIMEOUT))
until [[ "$(status "$PROBE_TOKEN" "$CART_URL")" == 200 ]]; do
  alive "$CART_PID" || { tail -n 20 "$WORK/cart.log" >&2; die "cart-service exited"; }
  ((SECONDS < deadline)) || die "hub $HUB did not reach cart-service within ${READY_TIMEOUT}s: $(head -c 200 "$WORK/last.json")"
  sleep 0.5
done
python3 "$HELPER" skus "$STOCK_PORT" "$HUB" "$SKUS" "$WORK/skus.txt"
log "raising the counts of $SKUS SKUs at $HUB to 1,000,000"
while IFS= read -r sku; do
  code="$(status "$STAFF" -X PUT -H 'Content-Type: application/json' -d '{"available":1000000}' \
    "http://127.0.0.1:$STOCK_PORT/v1/hubs/$HUB/stock/$sku")"
  [[ "$code" == 200 ]] || die "PUT stock $sku answered $code: $(head -c 300 "$WORK/last.json")"
done <"$WORK/skus.txt"
# A count reaches CartService by stock.changed: wait until 99 of every SKU fit in a cart.
python3 "$HELPER" counts "$CART_PORT" "$HUB" "$PROBE_TOKEN" "$WORK/skus.txt" "$((deadline - SECONDS))"
log "catalogue and counts at cart-service after ${SECONDS}s of this run"

# --- The carts, before anything is timed.
log "preparing $USERS carts of $LINES lines"
prepare_start=$SECONDS
python3 "$HELPER" prepare "$CART_PORT" "$HUB" "$WORK/tokens.tsv" "$WORK/skus.txt" "$LINES" "$WORK/carts.tsv"
log "$USERS carts ready in $((SECONDS - prepare_start))s"
head -n "$RATE_ORDERS" "$WORK/carts.tsv" >"$WORK/carts-rate.tsv"
for i in "${!LEVELS[@]}"; do
  awk -v from="$((RATE_ORDERS + i * FULL_ORDERS + 1))" -v to="$((RATE_ORDERS + (i + 1) * FULL_ORDERS))" \
    'NR >= from && NR <= to' "$WORK/carts.tsv" >"$WORK/carts-full-$i.tsv"
done

# --- The yardstick's requests: the same 200 lists of 20 ids as Benchmarks/stock-lookup, warmed.
awk -v hub="$HUB" 'BEGIN {
  for (i = 0; i < 200; i++) {
    line = "/v1/hubs/" hub "/stock?ids="
    for (j = 0; j < 20; j++) line = line (j ? "," : "") sprintf("p%05d", (i * 37 + j * 151) % 3000 + 1)
    print line
  }
}' >"$WORK/stock-paths.txt"
urls=()
while IFS= read -r path; do urls+=(-o /dev/null "http://127.0.0.1:$STOCK_PORT$path"); done <"$WORK/stock-paths.txt"
bad="$(curl -sg -H "Authorization: Bearer $PROBE_TOKEN" -w '%{http_code}\n' "${urls[@]}" | grep -cvx 200 || true)"
((bad == 0)) || die "$bad of 200 stock lookups did not answer 200"

metric_sum() { # port prefix: sum of the metric lines whose name starts with prefix
  curl -s --max-time 5 "http://127.0.0.1:$1/metrics" 2>/dev/null |
    awk -v m="$2" 'index($1, m) == 1 { s += $NF } END { printf "%d", s }'
}
order_metric_sum() { # prefix: metric_sum over every OrderService replica
  local port total=0
  for port in "${ORDER_PORTS[@]}"; do total=$((total + $(metric_sum "$port" "$1"))); done
  echo "$total"
}
# Orders confirmed by every OrderService replica since it started.
confirmed_count() { order_metric_sum 'checkout_outcomes_total{outcome="confirmed"}'; }
declare -A RESULT
field() { sed -n "s/.*[ ]$2=\([0-9.]*\).*/\1/p" <<<" ${RESULT[$1]:-}"; }
# Reads OrderService's database, or the simulated provider's (`payments`), on either engine.
db_sql() { # order|payments sql
  if [[ "$ENGINE" == postgres ]]; then
    bash "$POSTGRES_SCRIPT" psql -X -q -d "${RUN_ID}_$1" -Atc "$2"
  elif [[ "$1" == order ]]; then
    sqlite3 -readonly "$WORK/order/order.sqlite" "$2"
  else
    sqlite3 -readonly "$WORK/order/payment-simulator.sqlite" "$2"
  fi
}
order_sql() { db_sql order "$1"; }
# Seconds from an order's first record to its last step, inside OrderService (both REAL unix times).
saga_ms() { # first-user last-user: p50 and p99 of updated_at - created_at over those users' orders
  order_sql "SELECT (updated_at - created_at) * 1000 FROM orders WHERE step = 'confirmed' AND user_id BETWEEN '$1' AND '$2' ORDER BY 1" |
    awk 'function at(p, i) { i = int(NR * p + 0.5); if (i < 1) i = 1; return v[i] }
      { v[NR] = $1 } END { if (NR) printf "p50 %.1f, p99 %.1f", at(0.5), at(0.99); else printf "-" }'
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# CPU time (clock ticks, user + system) of a process.
proc_ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# The broker's VM, or every node's on a cluster (GROCER_BROKER=cluster, rabbitmq.sh's names).
if [[ "${GROCER_BROKER:-single}" == cluster ]]; then
  BROKER_PIDS=()
  for pid_file in "$VAR_DIR"/rabbitmq/"${GROCER_RABBITMQ_CLUSTER_NAME:-grocer}"-[123]/rabbitmq.pid; do
    [[ -s "$pid_file" ]] && BROKER_PIDS+=("$(tr -dc '0-9' <"$pid_file")")
  done
else
  BROKER_PIDS=($(pgrep -o -f 'beam.smp.*rabbit' || true))
fi
CPU_NAMES=(order cart stock broker postgres front)
event_counts() { # metric: its sum at order-service, cart-service, stock-service
  echo "$(order_metric_sum "$1") $(metric_sum "$CART_PORT" "$1") $(metric_sum "$STOCK_PORT" "$1")"
}
pids_ticks() { # pids...: their ticks together
  local pid total=0
  for pid in "$@"; do total=$((total + $(proc_ticks "$pid"))); done
  echo "$total"
}
# Every process of the local PostgreSQL cluster (the server and its backends); none on SQLite.
postgres_ticks() {
  if [[ "$ENGINE" == postgres ]]; then pids_ticks $(pgrep -x postgres || true); else echo 0; fi
}
cpu_snapshot() { # the ticks of order (every replica), cart, stock, broker, postgres, front, then the machine's busy and steal ticks
  echo "$(pids_ticks "${ORDER_PIDS[@]}") $(proc_ticks "$CART_PID") $(proc_ticks "$STOCK_PID")" \
    "$(pids_ticks "${BROKER_PIDS[@]}") $(postgres_ticks)" \
    "$(if [[ -n "$FRONT_PID" ]]; then pids_ticks $(pgrep -P "$FRONT_PID") "$FRONT_PID"; else echo 0; fi) $(machine_ticks)"
}

echo "order: $ENGINE, $REPLICAS OrderService replica(s); $(nproc) cores, broker vhost ${BENCH_VHOST:-/}, hub $HUB, $LINES lines per cart over $SKUS SKUs, $USERS carts prepared"

# order-service's own view of POST /v1/orders (its latency histogram), between two snapshots:
# the bucket bounds under which half and 99 % of the requests were answered.
# With several replicas their buckets are added up, bound by bound.
order_buckets() {
  local port
  for port in "${ORDER_PORTS[@]}"; do
    curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | grep '^http_request_duration_seconds_bucket{.*method="POST".*route="/v1/orders"' || true
  done | awk '{ match($0, /le="[^"]*"/); le = substr($0, RSTART, RLENGTH); if (!(le in sum)) order[++n] = le; sum[le] += $NF }
    END { for (i = 1; i <= n; i++) print "bucket{" order[i] "} " sum[order[i]] }'
}
# order-service's checkout steps and actions (`checkout_step_seconds` and `checkout_action_seconds`
# sums and counts by label, every replica's added up), compared between two snapshots by step_means.
step_sums() {
  local port
  for port in "${ORDER_PORTS[@]}"; do
    curl -s --max-time 5 "http://127.0.0.1:$port/metrics" | grep -E '^checkout_(step|action)_seconds_(sum|count)\{' || true
  done | awk '{ match($0, /(step|action)="[^"]*"/); step = substr($0, RSTART, RLENGTH); sub(/^[a-z]*="/, "", step); sub(/"$/, "", step)
      kind = ($1 ~ /_sum\{/) ? "sum" : "count"; v[step " " kind] += $NF }
    END { for (k in v) print k, v[k] }'
}
step_means() { # before-file after-file: "step mean-ms (count)" for each step that ran between them
  awk 'FILENAME == ARGV[1] { before[$1 " " $2] = $3; next }
    { delta[$1 " " $2] = $3 - before[$1 " " $2]; steps[$1] = 1 }
    END {
      for (s in steps) if (delta[s " count"] > 0)
        out = out sprintf("%s%s %.1f ms (%d)", out ? ", " : "", s, 1000 * delta[s " sum"] / delta[s " count"], delta[s " count"])
      printf "%s", out ? out : "-"
    }' "$1" "$2"
}
server_quantiles() { # before-file after-file
  awk '{ match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5) }
    FILENAME == ARGV[1] { before[le] = $NF; next }
    { n++; bound[n] = le; delta[n] = $NF - before[le] }
    END {
      total = delta[n]
      if (total <= 0) { printf "-"; exit }
      for (i = 1; i <= n; i++) {
        if (!p50 && delta[i] >= 0.5 * total) p50 = bound[i]
        if (!p99 && delta[i] >= 0.99 * total) p99 = bound[i]
      }
      printf "p50 <= %s s, p99 <= %s s (%d requests)", p50, p99, total
    }' "$1" "$2"
}

# --- Quiet before timing: the preparation's events (StockService's demo load; cart.changed per
# PUT when a caller turned them on) may still be leaving an outbox; measured orders should not
# compete with them.
quiet_deadline=$((SECONDS + 60))
while ((SECONDS < quiet_deadline)) &&
  [[ "$(metric_sum "$CART_PORT" outbox_backlog)$(metric_sum "$STOCK_PORT" outbox_backlog)" != 00 ]]; do
  sleep 0.5
done
sleep 2

# --- (1) Fixed rate, open loop.
log "fixed rate: $RATE orders/s for ${RATE_SECONDS}s ($RATE_ORDERS orders)"
order_buckets >"$WORK/buckets-before.txt"
step_sums >"$WORK/steps-before.txt"
read -ra RATE_CPU_BEFORE < <(cpu_snapshot)
started_ms=$(now_ms)
out="$(python3 "$HELPER" rate "$ORDER_URL_PORT" "$HUB" "$RATE" "$WORK/carts-rate.tsv" "$RUN_ID-rate")" ||
  { echo "$out" >&2; die "the fixed-rate run failed"; }
RESULT[rate]="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
echo "rate  ${RESULT[rate]#RESULT }"
read -ra RATE_CPU_AFTER < <(cpu_snapshot)
window_ms=$(($(now_ms) - started_ms))
RATE_MACHINE="machine busy $(core_share $((RATE_CPU_AFTER[4] - RATE_CPU_BEFORE[4])) "$window_ms"), steal $(core_share $((RATE_CPU_AFTER[5] - RATE_CPU_BEFORE[5])) "$window_ms")"
order_buckets >"$WORK/buckets-after.txt"
RATE_SERVER="$(server_quantiles "$WORK/buckets-before.txt" "$WORK/buckets-after.txt")"
step_sums >"$WORK/steps-after.txt"
RATE_STEPS="$(step_means "$WORK/steps-before.txt" "$WORK/steps-after.txt")"
orders_alive || die "order-service died during the fixed-rate run"
sleep 2

# --- (2) Full speed, closed loop: one run per connection count, each over carts of its own.
TICK_MS=$((1000 / $(getconf CLK_TCK)))
per_order() { # total count: total / count with 2 decimals, or - (a process restarted meanwhile counts from 0)
  awk -v t="$1" -v n="$2" -v d="${3:-2}" 'BEGIN { printf (n > 0 && t >= 0 ? sprintf("%.*f", d, t / n) : "-") }'
}
BEST=""
FULL_CREATED=0
FULL_OTHERS=0
declare -A CPU_LINE EVENTS_LINE CPU_MS XACTS_LINE
XACT_SERVICES=(stock cart order payments)
# Each service database's transactions (commits, then rollbacks of all), as pg_stat_database
# counts them (flushed within a second of a backend going idle): per order they hold still
# where CPU times swing with the machine. Zeros on SQLite.
pg_xacts() {
  if [[ "$ENGINE" != postgres ]]; then
    echo 0 0 0 0 0
    return
  fi
  local service columns=""
  for service in "${XACT_SERVICES[@]}"; do
    columns+="(SELECT xact_commit FROM pg_stat_database WHERE datname = '${RUN_ID}_$service'), "
  done
  bash "$POSTGRES_SCRIPT" psql -X -q -d postgres -F ' ' -Atc "SELECT $columns(SELECT sum(xact_rollback)
    FROM pg_stat_database WHERE datname LIKE '${RUN_ID}_%')"
}
# Statements per order by database, and the dearest ones, from pg_stat_statements (preloaded by
# deploy/local/postgres.sh; a cluster started without it reports nothing). Reset before each
# full-speed run, read after it; exec ms is time inside the executor, lock waits included.
PG_STATEMENTS=""
if [[ "$ENGINE" == postgres ]] &&
  bash "$POSTGRES_SCRIPT" psql -X -q -d postgres -Atc "SHOW shared_preload_libraries" | grep -q pg_stat_statements; then
  bash "$POSTGRES_SCRIPT" psql -X -q -d postgres -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
  PG_STATEMENTS=1
fi
pg_statements() { # reset | report CONFIRMED FILE
  [[ -n "$PG_STATEMENTS" ]] || return 0
  if [[ "$1" == reset ]]; then
    bash "$POSTGRES_SCRIPT" psql -X -q -d postgres -Atc "SELECT pg_stat_statements_reset()" >/dev/null
    return
  fi
  bash "$POSTGRES_SCRIPT" psql -X -q -d postgres -F $'\t' -Atc "SELECT substr(d.datname, length('${RUN_ID}_') + 1),
      s.calls, s.total_exec_time, regexp_replace(s.query, '\s+', ' ', 'g')
    FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
    WHERE d.datname LIKE '${RUN_ID}_%' ORDER BY s.total_exec_time DESC" |
    awk -F '\t' -v n="$2" '{ calls[$1] += $2; ms[$1] += $3; if (++top <= 8) lines[top] = sprintf("    %-8s %5.2f an order, %6.3f ms each: %s", $1, $2 / n, $3 / ($2 > 0 ? $2 : 1), substr($4, 1, 90)) }
      END {
        line = "  by database:"; for (d in calls) line = line sprintf(" %s %.1f (%.2f ms)", d, calls[d] / n, ms[d] / n)
        print line; print "  the 8 that took longest inside PostgreSQL:"; for (i = 1; i <= top && i <= 8; i++) print lines[i]
      }' >"$3"
}
for i in "${!LEVELS[@]}"; do
  c=${LEVELS[i]}
  log "full speed: wrk -t$THREADS -c$c over $FULL_ORDERS carts (at most $FULL_DURATION)"
  first_user="$(printf '%s-u%06d' "$RUN_ID" "$((RATE_ORDERS + i * FULL_ORDERS + 1))")"
  last_user="$(printf '%s-u%06d' "$RUN_ID" "$((RATE_ORDERS + (i + 1) * FULL_ORDERS))")"
  read -ra PUBLISHED_BEFORE < <(event_counts outbox_published_total)
  read -ra CONSUMED_BEFORE < <(event_counts events_consumed_total)
  read -ra XACTS_BEFORE < <(pg_xacts)
  pg_statements reset
  confirmed_before=$(confirmed_count)
  read -ra CPU_BEFORE < <(cpu_snapshot)
  started_ms=$(now_ms)
  ORDER_BENCH_THREADS="$THREADS" wrk -t"$THREADS" -c"$c" -d"$FULL_DURATION" --timeout 10s \
    -s "$HERE/orders.lua" "http://127.0.0.1:$ORDER_URL_PORT" -- "$WORK/carts-full-$i.tsv" "$HUB" "$RUN_ID-full$i" \
    >"$WORK/wrk-$i.txt" 2>&1 &
  wrk_pid=$!
  # wrk sleeps out its whole -d even when every thread has stopped: the run ends when the last of
  # its orders is confirmed (CPU counted up to then), and an interrupt makes wrk report at once.
  # It is watched through OrderService's counter: a query per look (a psql process and a fresh
  # PostgreSQL backend each time) cost as much CPU as a tenth of the orders; the database is
  # asked once, for the exact count, at the end.
  confirmed_in_run() {
    order_sql "SELECT count(*) FROM orders WHERE step = 'confirmed' AND user_id BETWEEN '$first_user' AND '$last_user'"
  }
  while alive "$wrk_pid" && (($(confirmed_count) - confirmed_before < FULL_ORDERS)); do sleep 0.2; done
  read -ra CPU_AFTER < <(cpu_snapshot)
  window_ms=$(($(now_ms) - started_ms))
  confirmed=$(confirmed_in_run)
  kill -INT "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" || { cat "$WORK/wrk-$i.txt" >&2; die "wrk failed"; }
  out="$(cat "$WORK/wrk-$i.txt")"
  read -ra PUBLISHED_AFTER < <(event_counts outbox_published_total)
  read -ra CONSUMED_AFTER < <(event_counts events_consumed_total)
  if [[ "$ENGINE" == postgres ]]; then
    sleep 1.2
    read -ra XACTS_AFTER < <(pg_xacts)
    line="c=$c:"
    for k in 0 1 2 3; do
      line+=" ${XACT_SERVICES[k]} $(per_order $((XACTS_AFTER[k] - XACTS_BEFORE[k])) "$confirmed" 1)"
    done
    XACTS_LINE[$i]="$line; rolled back $((XACTS_AFTER[4] - XACTS_BEFORE[4])) in all"
    pg_statements report "$confirmed" "$WORK/statements-$i.txt"
  fi
  RESULT[full$i]="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
  [[ -n "${RESULT[full$i]}" ]] || { echo "$out" >&2; die "no RESULT from wrk"; }
  echo "full c=$c ${RESULT[full$i]#RESULT }"
  orders_alive || die "order-service died during the full-speed run at $c connections"
  FULL_CREATED=$((FULL_CREATED + $(field "full$i" created)))
  FULL_OTHERS=$((FULL_OTHERS + $(field "full$i" non201) + $(field "full$i" socket_errors)))
  line="c=$c:"
  for k in 0 1 2 3 4 5; do
    CPU_MS[$i,$k]="$(per_order $(((CPU_AFTER[k] - CPU_BEFORE[k]) * TICK_MS)) "$confirmed")"
    line+=" ${CPU_NAMES[k]} ${CPU_MS[$i,$k]}"
  done
  line+="; machine busy $(core_share $((CPU_AFTER[6] - CPU_BEFORE[6])) "$window_ms")"
  CPU_LINE[$i]="$line, steal $(core_share $((CPU_AFTER[7] - CPU_BEFORE[7])) "$window_ms")"
  line="c=$c:"
  for k in 0 1 2; do
    line+=" ${CPU_NAMES[k]} published $(per_order $((PUBLISHED_AFTER[k] - PUBLISHED_BEFORE[k])) "$confirmed" 1)"
    line+=" consumed $(per_order $((CONSUMED_AFTER[k] - CONSUMED_BEFORE[k])) "$confirmed" 1),"
  done
  EVENTS_LINE[$i]="${line%,}"
  if [[ -z "$BEST" ]] || awk -v a="$(field "full$i" rps)" -v b="$(field "full$BEST" rps)" 'BEGIN { exit !(a > b) }'; then
    BEST=$i
  fi
  sleep 2
done
ORDER_RSS_KB="$(awk '/^VmRSS:/ { print $2 }' "/proc/$ORDER_PID/status")"

# --- Every order settled? Wait for unfinished sagas and the outbox, then count.
settle_deadline=$((SECONDS + 60))
while (($(order_sql "SELECT count(*) FROM orders WHERE step IN ('received','priced','reserved','charging')") > 0)) ||
  [[ "$(order_metric_sum outbox_backlog)" != 0 ]]; do
  ((SECONDS < settle_deadline)) || { log "orders or events still unsettled after 60s"; break; }
  sleep 0.5
done
STEPS="$(order_sql "SELECT step || ':' || count(*) FROM orders GROUP BY step ORDER BY step" | paste -sd ' ' -)"
CONFIRMED="$(order_sql "SELECT count(*) FROM orders WHERE step = 'confirmed'")"
ORDERS_TOTAL="$(order_sql "SELECT count(*) FROM orders")"
CHARGES="$(db_sql payments "SELECT count(*) FROM charges")"
CHARGED_KEYS="$(db_sql payments "SELECT count(DISTINCT reference) FROM charges")"
SENT_201=$(($(field rate created) + FULL_CREATED))
RATE_SAGA="$(saga_ms "$RUN_ID-u000001" "$(printf '%s-u%06d' "$RUN_ID" "$RATE_ORDERS")")"
full_saga() { # level index: the saga times of that run's users
  saga_ms "$(printf '%s-u%06d' "$RUN_ID" "$((RATE_ORDERS + $1 * FULL_ORDERS + 1))")" \
    "$(printf '%s-u%06d' "$RUN_ID" "$((RATE_ORDERS + ($1 + 1) * FULL_ORDERS))")"
}

# A sample of carts that ordered must be empty (order.confirmed reached CartService).
sample_full=0
sample_empty=0
empty_deadline=$((SECONDS + 30))
while IFS=$'\t' read -r user token _; do
  order_sql "SELECT 1 FROM orders WHERE user_id = '$user' AND step = 'confirmed'" | grep -q 1 || continue
  sample_full=$((sample_full + 1))
  until [[ "$(status "$token" "$CART_URL")" == 200 ]] && grep -q '"lines":\[\]' "$WORK/last.json"; do
    ((SECONDS < empty_deadline)) || continue 2
    sleep 0.2
  done
  sample_empty=$((sample_empty + 1))
done < <(awk 'NR % 97 == 1' "$WORK/carts.tsv")

# --- (3) The yardstick: StockService's stock lookup on the same machine, in the same run.
sleep 1
out="$(wrk -t2 -c64 -d5s --timeout 5s -s "$HERE/../stock-lookup/ids.lua" "http://127.0.0.1:$STOCK_PORT" \
  -- "$WORK/stock-paths.txt" "$PROBE_TOKEN" 2>&1)" || { echo "$out" >&2; die "wrk failed"; }
RESULT[stock]="$(grep '^RESULT ' <<<"$out" | tail -n 1)"
echo "stock ${RESULT[stock]#RESULT }"

# --- Summary.
ms() { awk -v us="$1" 'BEGIN { printf (us == "" ? "-" : sprintf("%.1f", us / 1000)) }'; }
echo
# SQLite's target, and issue 23's for PostgreSQL on this 2-core machine.
TARGET_RPS=500
[[ "$ENGINE" == sqlite ]] || TARGET_RPS=300
echo "Summary, $ENGINE with $REPLICAS OrderService replica(s) (targets: >= $TARGET_RPS orders/s at full speed; p99 < 50 ms at $RATE orders/s)"
printf '%-22s %9s %8s %8s %8s %8s %8s %9s\n' what "orders/s" "p50 ms" "p90 ms" "p99 ms" "max ms" "201s" "non-201"
row() { # label result-name
  printf '%-22s %9s %8s %8s %8s %8s %8s %9s\n' "$1" "$(field "$2" rps)" "$(ms "$(field "$2" p50_us)")" \
    "$(ms "$(field "$2" p90_us)")" "$(ms "$(field "$2" p99_us)")" "$(ms "$(field "$2" max_us)")" \
    "$(field "$2" created)" "$(field "$2" non201)"
}
row "fixed $RATE/s (open)" rate
for i in "${!LEVELS[@]}"; do row "full speed (c=${LEVELS[i]})" "full$i"; done
printf '%-22s %9s %8s %8s %8s %8s\n' "stock lookup (c=64)" "$(field stock rps)" "$(ms "$(field stock p50_us)")" \
  "$(ms "$(field stock p90_us)")" "$(ms "$(field stock p99_us)")" "$(ms "$(field stock max_us)")"
full_rps="$(field "full$BEST" rps)"
full_c="${LEVELS[BEST]}"
stock_rps="$(field stock rps)"
echo "full speed is the best run, c=$full_c: $full_rps orders/s;" \
  "orders/s / stock lookups/s $(awk -v o="$full_rps" -v s="$stock_rps" 'BEGIN { printf (s > 0 ? sprintf("%.4f (1 order = %.0f lookups)", o / s, s / o) : "-") }')"
echo "fixed rate: $RATE_MACHINE; $(field rate connections) connections used, sends at most $(ms "$(field rate send_late_p99_us)") ms late (p99);" \
  "service time (from send) p50 $(ms "$(field rate service_p50_us)") ms, p99 $(ms "$(field rate service_p99_us)") ms"
for i in "${!LEVELS[@]}"; do
  echo "full speed c=${LEVELS[i]}: $(field "full$i" elapsed_ms) ms for $(field "full$i" requests) answers;" \
    "threads that used up their carts: $(field "full$i" exhausted) of $THREADS;" \
    "saga inside order-service (updated_at - created_at, ms) $(full_saga "$i")"
done
echo "CPU per confirmed order at full speed (ms); the machine's busy and stolen (by the host) share of $(nproc) cores until the run's last order was confirmed:"
for i in "${!LEVELS[@]}"; do echo "  ${CPU_LINE[$i]}"; done
echo "events per confirmed order at full speed:"
for i in "${!LEVELS[@]}"; do echo "  ${EVENTS_LINE[$i]}"; done
if [[ "$ENGINE" == postgres ]]; then
  echo "PostgreSQL transactions per confirmed order at full speed (commits, reads included, by database):"
  for i in "${!LEVELS[@]}"; do echo "  ${XACTS_LINE[$i]}"; done
  if [[ -s "$WORK/statements-$BEST.txt" ]]; then
    echo "PostgreSQL statements per confirmed order at full speed c=${LEVELS[BEST]} (exec ms per order):"
    cat "$WORK/statements-$BEST.txt"
  fi
fi
echo "fixed rate as order-service's histogram saw it: $RATE_SERVER"
echo "saga inside order-service (updated_at - created_at of confirmed orders, ms) at the fixed rate: $RATE_SAGA"
echo "checkout steps (by the step each began at) and actions at the fixed rate, mean (count): $RATE_STEPS"
echo "orders in OrderService's database: $ORDERS_TOTAL ($STEPS); 201s received: $SENT_201; simulator charges: $CHARGES for $CHARGED_KEYS orders"
echo "carts emptied by order.confirmed: $sample_empty of a sample of $sample_full"
echo "order-service RSS after the full-speed run: $((ORDER_RSS_KB / 1024)) MB; $(grep -c . "$WORK/order.log" || true) log lines at $LEVEL"
if [[ -s "$WORK/order.log" ]]; then
  echo "order-service log (first lines):"
  head -n 5 "$WORK/order.log" | cut -c 1-240 | sed 's/^/  /'
fi

verdict() { if awk "BEGIN { exit !($2) }"; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
echo "Targets:"
verdict "full speed $full_rps orders/s (c=$full_c) >= $TARGET_RPS" "$full_rps >= $TARGET_RPS"
verdict "p99 $(ms "$(field rate p99_us)") ms < 50 ms at $RATE orders/s" "$(field rate p99_us) < 50000"
verdict "every answer 201 ($(field rate non201) at the fixed rate, $FULL_OTHERS at full speed, socket errors included)" \
  "$(field rate non201) + $FULL_OTHERS == 0"
verdict "every order confirmed ($CONFIRMED of $ORDERS_TOTAL), one charge each ($CHARGES), at least every 201 ($SENT_201)" \
  "$CONFIRMED == $ORDERS_TOTAL && $CHARGES == $CONFIRMED && $CHARGED_KEYS == $CHARGES && $CONFIRMED >= $SENT_201"
verdict "sampled carts emptied ($sample_empty of $sample_full)" "$sample_empty == $sample_full && $sample_full > 0"
cpu_fields=""
for k in 0 1 2 3 4 5; do cpu_fields+=" cpu_${CPU_NAMES[k]}_ms=${CPU_MS[$BEST,$k]}"; done
echo "PASS engine=$ENGINE replicas=$REPLICAS full_rps=$full_rps full_c=$full_c rate_p99_ms=$(ms "$(field rate p99_us)") rate_p50_ms=$(ms "$(field rate p50_us)") stock_rps=$stock_rps$cpu_fields"
