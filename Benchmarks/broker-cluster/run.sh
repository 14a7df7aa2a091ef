#!/usr/bin/env bash
# The broker on three nodes against one, side by side on one machine: confirmed events/s of the
# outbox relay (grocer-bench-relay into a quorum queue, three replicas on the cluster) alternating
# between the single node and a cluster of the benchmark's own, then the order benchmark on each
# (Benchmarks/order/run.sh with the setups sqlite:1 and sqlite:1:cluster). Builds nothing:
# `make bench` builds the release binaries first.
#
# Environment (all optional):
#   BENCH_EVENTS         events per relay measurement (default 30000)
#   BENCH_BATCH          the relay's batch size (default 500)
#   BENCH_ROUNDS         relay measurements per broker, alternating (default 3)
#   BENCH_CLUSTER_PORT   the cluster's first AMQP port (default 5692; 5692-5694)
#   BENCH_SKIP_ORDERS    1 measures the relay only
#   GROCER_BIN_DIR, GROCER_RABBITMQ_SCRIPT, and the order benchmark's variables
set -euo pipefail
LOG_PREFIX=broker-cluster
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

EVENTS="${BENCH_EVENTS:-30000}"
BATCH="${BENCH_BATCH:-500}"
ROUNDS="${BENCH_ROUNDS:-3}"
CLUSTER_PORT="${BENCH_CLUSTER_PORT:-5692}"
BIN="$BIN_DIR/grocer-bench-relay"
[[ -x "$BIN" ]] || die "$BIN is missing (make bench builds it)"
CLUSTER_ENV=(GROCER_BROKER=cluster GROCER_RABBITMQ_CLUSTER_NAME=grocer-bench GROCER_RABBITMQ_CLUSTER_PORT="$CLUSTER_PORT")
OUT="$(mktemp -d /tmp/grocer-bench-cluster.XXXXXX)"
trap 'rm -rf "$OUT"; env "${CLUSTER_ENV[@]}" bash "$RABBITMQ_SCRIPT" stop >/dev/null 2>&1' EXIT

bash "$RABBITMQ_SCRIPT" start
env "${CLUSTER_ENV[@]}" bash "$RABBITMQ_SCRIPT" start

# One relay measurement into a fresh quorum queue in the broker's default vhost (the command
# declares and deletes its own queue); prints the relay's and the bare publisher's events/s.
relay() { # url
  "$BIN" --events "$EVENTS" --batches "$BATCH" <<<"" 2>&1 | awk '
    /^relay / { for (i = 1; i <= NF; i++) if ($i ~ /^confirmed_per_s=/) { split($i, kv, "="); relay = kv[2] } }
    /^baseline .*in_flight=4/ { for (i = 1; i <= NF; i++) if ($i ~ /^confirmed_per_s=/) { split($i, kv, "="); bare = kv[2] } }
    END { print relay + 0, bare + 0 }'
}
for round in $(seq 1 "$ROUNDS"); do
  for broker in single cluster; do
    if [[ "$broker" == single ]]; then url="amqp://guest:guest@127.0.0.1:${GROCER_AMQP_PORT:-5672}/"; else url="amqp://guest:guest@127.0.0.1:$CLUSTER_PORT/"; fi
    read -r relay bare < <(GROCER_AMQP_URL="$url" relay)
    echo "relay broker=$broker round=$round events=$EVENTS batch=$BATCH relay_per_s=$relay publisher_per_s=$bare" |
      tee -a "$OUT/relay.txt"
  done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
column() { # broker field
  grep "broker=$1 " "$OUT/relay.txt" | sed -n "s/.*[ ]$2=\([0-9]*\).*/\1/p" | median
}
single_relay="$(column single relay_per_s)" cluster_relay="$(column cluster relay_per_s)"
single_bare="$(column single publisher_per_s)" cluster_bare="$(column cluster publisher_per_s)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (b + 0 > 0 ? sprintf("%.2f", a / b) : "-") }'; }
echo
echo "Relay into a quorum queue, median of $ROUNDS alternating rounds ($(nproc) cores; the three nodes share them):"
printf '%-10s %12s %14s\n' broker "relay/s" "publisher/s"
printf '%-10s %12s %14s\n' single "$single_relay" "$single_bare"
printf '%-10s %12s %14s\n' cluster "$cluster_relay" "$cluster_bare"
echo "ratio cluster/single: relay $(ratio "$cluster_relay" "$single_relay"), publisher $(ratio "$cluster_bare" "$single_bare")"

if [[ "${BENCH_SKIP_ORDERS:-0}" != 1 ]]; then
  echo
  # The order benchmark's own verdicts are shown bracketed: they are not this benchmark's targets
  # (there are none), so `make bench`'s table does not count them twice or against the cluster.
  BENCH_ORDER_SETUPS="sqlite:1 sqlite:1:cluster" BENCH_CLUSTER_PORT="$CLUSTER_PORT" \
    BENCH_CONNECTIONS="${BENCH_CONNECTIONS:-64}" BENCH_FULL_ORDERS="${BENCH_FULL_ORDERS:-3000}" \
    bash "$HERE/../order/run.sh" | sed -E 's/^( +)(ok|MISS)( +)/\1[\2]\3/'
fi
echo "Targets: none set (issue 24 asks for the numbers side by side); the cluster replicates every"
echo "quorum queue write to three nodes on the same cores."
