#!/usr/bin/env bash
# Push load: NotifyGateway's whole path — tracking.updated through RabbitMQ, the consumer and
# its store (coalescing), the delivery engine and push policy, into the APNs simulator — with
# `grocer load push`, which starts `notify-gateway` (beside `grocer`) as a process of its own on a
# queue of its own, so the peak memory and CPU per push it reports are the gateway's alone.
# Two runs: a fixed 1,000 events/s for BENCH_SECONDS (latency target: p99 < 100 ms) and a short
# one at BENCH_MAX_RATE events/s (throughput target: >= 5,000 pushes/s). Builds nothing: `make
# bench` builds the release binaries first.
#
# The full-speed run spreads its events over BENCH_MAX_ORDERS activities (one update each every
# few seconds, as real tracking goes): over fewer, each activity gets several updates a second and
# only the newest is pushed (coalescing, counted), which measures the policy, not the throughput.
#
# Environment (all optional):
#   BENCH_ORDERS 2000   BENCH_SECONDS 60   BENCH_MAX_ORDERS 20000   BENCH_MAX_RATE 6000   BENCH_MAX_SECONDS 15
#   BENCH_MAX_STARTS 500  orders confirmed during the full-speed run that the gateway starts by
#                         push-to-start (their start pushes and confirmation alerts mix in)
#   GROCER_BIN_DIR      where grocer is (default .build/release)
set -euo pipefail
LOG_PREFIX=push-bench
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

ORDERS="${BENCH_ORDERS:-2000}"
SECONDS_AT_1000="${BENCH_SECONDS:-60}"
MAX_ORDERS="${BENCH_MAX_ORDERS:-20000}"
MAX_RATE="${BENCH_MAX_RATE:-6000}"
MAX_SECONDS="${BENCH_MAX_SECONDS:-15}"
MAX_STARTS="${BENCH_MAX_STARTS:-500}"
[[ -x "$BIN_DIR/grocer" ]] || die "$BIN_DIR/grocer is missing (make bench builds it)"
bash "$RABBITMQ_SCRIPT" start >/dev/null
trap bench_vhost_drop EXIT
bench_vhost_make push-bench

OUT="$(mktemp -d /tmp/grocer-bench-push.XXXXXX)"
log "charts and reports in $OUT"
export GROCER_LOG_LEVEL=warning

echo "== fixed rate: 1000 tracking.updated/s for ${SECONDS_AT_1000} s, $ORDERS Live Activities"
"$BIN_DIR/grocer" load push --orders "$ORDERS" --rate 1000 --seconds "$SECONDS_AT_1000" \
  --chart "$OUT/push-1000.svg" | tee "$OUT/push-1000.txt"

echo
echo "== full speed: $MAX_RATE tracking.updated/s offered for ${MAX_SECONDS} s, $MAX_ORDERS Live Activities," \
  "$MAX_STARTS started by push"
"$BIN_DIR/grocer" load push --orders "$MAX_ORDERS" --rate "$MAX_RATE" --seconds "$MAX_SECONDS" \
  --starts "$MAX_STARTS" --chart "$OUT/push-max.svg" | tee "$OUT/push-max.txt"

echo
echo "charts: $OUT/push-1000.svg $OUT/push-max.svg"
# The numbers the tool printed: pushes/s of a run, its p99 event -> push in ms, its peak memory.
rate_of() { sed -n 's/.*pushes delivered.*(\([0-9.]*\) \/s.*/\1/p' "$1" | head -n 1; }
p99_of() { sed -n 's/.*event → push.* p99 \([0-9.]*\) ms.*/\1/p' "$1" | head -n 1; }
memory_of() { sed -n 's/.*peak memory *\([0-9.]*\) MB.*/\1/p' "$1" | head -n 1; }
verdict() { if awk "BEGIN { exit !($2) }" 2>/dev/null; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
echo "Targets (issues 6 and 25):"
full_rate="$(rate_of "$OUT/push-max.txt")"; full_p99="$(p99_of "$OUT/push-max.txt")"
paced_p99="$(p99_of "$OUT/push-1000.txt")"
verdict "full speed ${full_rate:-?} pushes/s >= 5000 ($MAX_ORDERS activities, $MAX_STARTS starts)" "${full_rate:-0} >= 5000"
starts="$(sed -n 's/.*start pushes *\([0-9]*\) of.*/\1/p' "$OUT/push-max.txt" | head -n 1)"
verdict "every start pushed: ${starts:-?} of $MAX_STARTS" "${starts:-0} == $MAX_STARTS"
verdict "full speed event -> push p99 ${full_p99:-?} ms < 1000 ms" "${full_p99:-99999} < 1000"
verdict "at 1,000/s event -> push p99 ${paced_p99:-?} ms < 100 ms" "${paced_p99:-99999} < 100"
for run in 1000 max; do
  memory="$(memory_of "$OUT/push-$run.txt")"
  verdict "peak memory ${memory:-?} MB < 60 MB ($run)" "${memory:-99999} < 60"
done
