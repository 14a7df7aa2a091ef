#!/usr/bin/env bash
# Codec benchmark: every hand-written JSON codec of the contracts against Codable (`JSON.encode` /
# `JSON.decode`) on the same value, in one process, in alternating rounds; prints ns per operation,
# the ratio and the microseconds each saves per use. Builds nothing: `make bench` builds the
# release binaries first. A codec stays hand-written only where this shows it pays
# (Benchmarks/README.md, "codecs").
#
# Environment (all optional):
#   BENCH_ROUNDS         rounds per codec (default 5)
#   BENCH_ROUND_SECONDS  seconds per side per round (default 0.2)
#   GROCER_BIN_DIR       where grocer-bench-codecs is (default .build/release)
set -euo pipefail
LOG_PREFIX=codecs
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=deploy/local/lib.sh
source "$HERE/../../deploy/local/lib.sh"

BIN="$BIN_DIR/grocer-bench-codecs"
[[ -x "$BIN" ]] || die "$BIN is missing (make bench builds it; or swift build -c release --product grocer-bench-codecs)"
"$BIN"
