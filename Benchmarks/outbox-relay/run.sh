#!/usr/bin/env bash
# Outbox-relay benchmark: confirmed events/s from a SQLite outbox through OutboxRelay and
# AMQPPublisher into a durable quorum queue on the local RabbitMQ, for several relay batch sizes,
# beside the publisher alone (same messages from memory, no SQLite; its batch and confirms in
# flight are the relay's), alternating twice; CPU per event of the process and of the broker.
# Builds nothing: `make bench` builds the release binaries first.
#
# Environment (all optional):
#   BENCH_EVENTS        events per measurement (default 50000)
#   BENCH_BATCHES       relay batch sizes (default "100,500,1000")
#   GROCER_AMQP_URL     the broker (default amqp://guest:guest@127.0.0.1:5672/)
#   GROCER_BIN_DIR      where grocer-bench-relay is (default .build/release)
#   GROCER_RABBITMQ_SCRIPT  the broker script (default deploy/local/rabbitmq.sh; started or reused)
set -euo pipefail
LOG_PREFIX=outbox-relay
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

EVENTS="${BENCH_EVENTS:-50000}"
BATCHES="${BENCH_BATCHES:-100,500,1000}"
TARGET=15000

BIN="$BIN_DIR/grocer-bench-relay"
[[ -x "$BIN" ]] || die "$BIN is missing (make bench builds it; or swift build -c release --product grocer-bench-relay)"
bash "$RABBITMQ_SCRIPT" start
OUT=""
trap 'rm -f "$OUT"; bench_vhost_drop' EXIT
bench_vhost_make relay-bench

# The command makes its own temporary SQLite files (under TMPDIR) and quorum queue, and removes
# both; its output is kept here for the summary.
OUT="$(mktemp /tmp/grocer-bench-relay.XXXXXX)"
"$BIN" --events "$EVENTS" --batches "$BATCHES" | tee "$OUT" ||
  die "grocer-bench-relay failed (exit ${PIPESTATUS[0]})"

# --- Summary: relay lines against the target and the publisher alone.
field() { sed -n "s/.*[ ]$2=\([0-9.]*\).*/\1/p" <<<" $1"; }
echo
echo "Summary (target: relay >= $TARGET confirmed events/s with pipelined confirms)"
printf '%-30s %10s %9s %12s %20s\n' run events seconds "confirmed/s" "CPU µs/event: own broker"
while IFS= read -r line; do
  case "$line" in
    relay\ * | baseline\ *)
      name="$(awk '{ print $1 }' <<<"$line") $(awk '{ print $2 }' <<<"$line")"
      [[ "$line" == baseline\ * ]] && name="$name $(awk '{ print $3 }' <<<"$line")"
      printf '%-30s %10s %9s %12s %14s %6s\n' "$name" "$(field "$line" events)" "$(field "$line" seconds)" \
        "$(field "$line" confirmed_per_s)" "$(field "$line" cpu_us_per_event)" "$(field "$line" broker_cpu_us_per_event)"
      ;;
  esac
done <"$OUT"
grep '^ratio ' "$OUT" || true

ratio_line="$(grep '^ratio ' "$OUT" || true)"
ratio="$(field "$ratio_line" ratio)"
baseline="$(field "$ratio_line" baseline_per_s)"
echo "Targets (issue 25):"
verdict() { if awk "BEGIN { exit !($2) }" 2>/dev/null; then echo "  ok    $1"; else echo "  MISS  $1"; fi; }
verdict "relay ${ratio:-?}x the bare publisher (its batch and confirms in flight, the better of two runs each) >= 0.9x" \
  "${ratio:-0} >= 0.9"
best=0
while IFS= read -r line; do
  rate="$(field "$line" confirmed_per_s)"
  ((rate > best)) && best=$rate
done < <(grep '^relay ' "$OUT")
if ((${baseline:-0} >= 16000)); then
  verdict "best relay $best events/s >= $TARGET (the bare publisher reached ${baseline})" "$best >= $TARGET"
else
  echo "  (the bare publisher reached ${baseline:-?} events/s here, under 16,000: the $TARGET target is not judged)"
fi
