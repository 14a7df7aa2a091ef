#!/usr/bin/env bash
# The order benchmark side by side: `one-pass.sh` once per setup, one right after the other on
# one machine and broker, then one table with each setup's numbers and its ratio to the first.
# A setup is ENGINE:REPLICAS (OrderService processes; StockService and CartService run one each),
# or ENGINE:REPLICAS:cluster for the services on a three-node RabbitMQ cluster of the benchmark's
# own (grocer-bench-N@localhost on BENCH_CLUSTER_PORT 5692-5694, started and stopped here).
#
# Environment (all optional; the rest goes through to one-pass.sh, which documents it):
#   BENCH_ORDER_SETUPS    "sqlite:1 postgres:1 postgres:2"
#   BENCH_CONNECTIONS     "64 128" here (each setup's full speed is the best of them)
#   BENCH_FULL_ORDERS     4000 carts per full-speed run
set -euo pipefail
LOG_PREFIX=order-bench
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

SETUPS="${BENCH_ORDER_SETUPS:-sqlite:1 postgres:1 postgres:2}"
export BENCH_CONNECTIONS="${BENCH_CONNECTIONS:-64 128}"
export BENCH_FULL_ORDERS="${BENCH_FULL_ORDERS:-4000}"
OUT="$(mktemp -d /tmp/grocer-bench-orders.XXXXXX)"

CLUSTER_ENV=(GROCER_BROKER=cluster GROCER_RABBITMQ_CLUSTER_NAME=grocer-bench
  GROCER_RABBITMQ_CLUSTER_PORT="${BENCH_CLUSTER_PORT:-5692}"
  GROCER_AMQP_URL="amqp://guest:guest@127.0.0.1:${BENCH_CLUSTER_PORT:-5692}/" GROCER_AMQP_URLS=)
cluster_used=0
trap 'rm -rf "$OUT"; if ((cluster_used)); then env "${CLUSTER_ENV[@]}" bash "$RABBITMQ_SCRIPT" stop >/dev/null 2>&1; fi' EXIT

PASSES=()
for setup in $SETUPS; do
  IFS=: read -r engine replicas broker <<<"$setup"
  broker="${broker:-single}"
  environment=()
  if [[ "$broker" == cluster ]]; then environment=("${CLUSTER_ENV[@]}") cluster_used=1; fi
  echo "=== order: $engine, $replicas OrderService replica(s), broker: $broker"
  env "${environment[@]}" BENCH_DB="$engine" BENCH_ORDER_REPLICAS="$replicas" bash "$HERE/one-pass.sh" |
    tee "$OUT/$setup.txt"
  pass="$(grep '^PASS ' "$OUT/$setup.txt" | tail -n 1)"
  [[ -n "$pass" ]] || die "the $setup pass printed no PASS line"
  PASSES+=("$pass broker=$broker")
  sleep 3
done

value() { sed -n "s/.*[ ]$2=\([^ ]*\).*/\1/p" <<<" $1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (a + 0 > 0 && b + 0 > 0 ? sprintf("%.2f", a / b) : "-") }'; }
echo
echo "Orders side by side ($(nproc) cores; ratios to the first setup; CPU in ms per confirmed order at full speed):"
printf '%-18s %10s %6s %8s %6s %8s %8s %8s %8s %8s %8s %8s\n' setup "orders/s" "x" "p99 ms" "x" order cart stock broker postgres front total
first="${PASSES[0]}"
for pass in "${PASSES[@]}"; do
  total=0
  for name in order cart stock broker postgres front; do
    total="$(awk -v t="$total" -v v="$(value "$pass" "cpu_${name}_ms")" 'BEGIN { printf "%.2f", t + (v == "-" ? 0 : v) }')"
  done
  label="$(value "$pass" engine):$(value "$pass" replicas)"
  [[ "$(value "$pass" broker)" == cluster ]] && label="$label:cluster"
  printf '%-18s %10s %6s %8s %6s %8s %8s %8s %8s %8s %8s %8s\n' \
    "$label" "$(value "$pass" full_rps)" \
    "$(ratio "$(value "$pass" full_rps)" "$(value "$first" full_rps)")" "$(value "$pass" rate_p99_ms)" \
    "$(ratio "$(value "$pass" rate_p99_ms)" "$(value "$first" rate_p99_ms)")" \
    "$(value "$pass" cpu_order_ms)" "$(value "$pass" cpu_cart_ms)" "$(value "$pass" cpu_stock_ms)" \
    "$(value "$pass" cpu_broker_ms)" "$(value "$pass" cpu_postgres_ms)" "$(value "$pass" cpu_front_ms)" "$total"
done
echo "Targets on PostgreSQL (issue 23): >= 300 orders/s, p99 < 50 ms at ${BENCH_RATE:-100}/s."
