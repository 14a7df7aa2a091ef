"""Merges wrk rounds of one target into one RESULT line (standard library only).

Reads, on standard input, the `RESULT …` and `QUANTILES …` lines `ids.lua` printed for each
round, each RESULT followed by `cpu_ticks=… steal_ticks=…`, and prints one RESULT: requests/s over
the rounds' summed duration, p50/p90/p99 of the merged latency distribution (each round's 1,000
quantiles weighted by its requests), the largest max, summed errors, the CPU ticks summed and the
machine's steal ticks summed.
"""

import re
import sys


def main() -> None:
    rounds = []
    current = None
    for line in sys.stdin:
        if line.startswith("RESULT "):
            current = dict((k, int(float(v))) for k, v in re.findall(r"(\w+)=([0-9.]+)", line))
            rounds.append(current)
        elif line.startswith("QUANTILES ") and current is not None:
            current["quantiles"] = [int(x) for x in line.split()[1:]]
    if not rounds:
        sys.exit("merge_rounds: no RESULT lines")
    requests = sum(r["requests"] for r in rounds)
    seconds = sum(r["duration_us"] for r in rounds) / 1e6
    weighted = []
    for r in rounds:
        quantiles = r.get("quantiles") or [r["p99_us"]]
        weight = r["requests"] / len(quantiles)
        weighted.extend((value, weight) for value in quantiles)
    weighted.sort()
    total = sum(weight for _, weight in weighted)

    def percentile(p: float) -> int:
        target = total * p / 100
        seen = 0.0
        for value, weight in weighted:
            seen += weight
            if seen >= target:
                return value
        return weighted[-1][0]

    print(
        "RESULT rps=%.0f p50_us=%d p90_us=%d p99_us=%d max_us=%d requests=%d non2xx=%d socket_errors=%d "
        "rounds=%d round_rps=%s cpu_ticks=%d steal_ticks=%d duration_us=%d"
        % (
            requests / seconds if seconds > 0 else 0,
            percentile(50),
            percentile(90),
            percentile(99),
            max(r["max_us"] for r in rounds),
            requests,
            sum(r["non2xx"] for r in rounds),
            sum(r["socket_errors"] for r in rounds),
            len(rounds),
            ",".join(str(r["rps"]) for r in rounds),
            sum(r.get("cpu_ticks", 0) for r in rounds),
            sum(r.get("steal_ticks", 0) for r in rounds),
            sum(r["duration_us"] for r in rounds),
        )
    )


if __name__ == "__main__":
    main()
