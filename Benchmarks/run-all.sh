#!/usr/bin/env bash
# `make bench`: every Benchmarks/*/run.sh in turn (each starts and stops what it measures), then
# one table of every target they judged, from their `ok`/`MISS` lines. A benchmark that fails is
# listed as such and the others still run; the exit status is that of the worst.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LOGS="$(mktemp -d /tmp/grocer-bench-all.XXXXXX)"
status=0
for script in "$HERE"/*/run.sh; do
  name="$(basename "$(dirname "$script")")"
  echo "=== $name"
  bash "$script" 2>&1 | tee "$LOGS/$name.log"
  code=${PIPESTATUS[0]}
  if ((code != 0)); then
    echo "  MISS  the benchmark itself failed (exit $code)" >>"$LOGS/$name.log"
    status=$code
  fi
done

echo
echo "=== every target (logs in $LOGS)"
printf '%-16s %-5s %s\n' benchmark "" target
for log in "$LOGS"/*.log; do
  name="$(basename "$log" .log)"
  grep -E '^ +(ok|MISS) ' "$log" | sed -E "s/^ +(ok|MISS) +/\\1\t/" |
    awk -F '\t' -v b="$name" '{ printf "%-16s %-5s %s\n", b, $1, $2 }'
done
misses="$(cat "$LOGS"/*.log | grep -cE '^ +MISS ' || true)"
oks="$(cat "$LOGS"/*.log | grep -cE '^ +ok ' || true)"
echo "$oks ok, $misses MISS"
exit "$status"
