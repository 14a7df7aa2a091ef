#!/usr/bin/env bash
# Kills what a test run left behind when it crashed: processes adopted by init (parent pid 1)
# that run one of this checkout's debug executables (the services a system test started; `make
# run` and the benchmarks run the release build, which this leaves alone), or
# an nginx a test started in its own temporary folder (grocer-system-*, grocer-h2-front-*).
# A test that ends normally stops its children itself; a test process that dies cannot, and its
# children would otherwise run on (an hour of six idle services and an nginx once, under the
# benchmarks). `make test` and `make faults` run it after the tests, passed or not.
#
#   deploy/check/reap-orphans.sh [BUILD_DIR]   (default: .build/debug under the repository)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD_DIR="$(cd "${1:-$ROOT/.build/debug}" 2>/dev/null && pwd -P)" || exit 0
TMP="${TMPDIR:-/tmp}"

reaped=0
for status in /proc/[0-9]*/status; do
  pid="${status#/proc/}"; pid="${pid%/status}"
  [[ "$pid" == "$$" ]] && continue
  ppid="$(awk '/^PPid:/ { print $2 }' "$status" 2>/dev/null)" || continue
  [[ "$ppid" == 1 ]] || continue
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null)" || continue
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || continue
  if [[ "$exe" == "$BUILD_DIR"/* ]] ||
    { [[ "$exe" == */nginx ]] && [[ "$cmdline" == *"$TMP/grocer-system-"* || "$cmdline" == *"$TMP/grocer-h2-front-"* ]]; }; then
    echo "reap-orphans: killing $pid ($cmdline)" >&2
    kill -KILL "$pid" 2>/dev/null && reaped=$((reaped + 1))
  fi
done
((reaped == 0)) || echo "reap-orphans: killed $reaped process(es) a test run left behind" >&2
exit 0
