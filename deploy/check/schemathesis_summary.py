#!/usr/bin/env python3
"""One line of totals from a schemathesis run's NDJSON report (used by schemathesis.sh).

    schemathesis_summary.py REPORT_DIR

Prints the cases sent per phase (examples, coverage and fuzzing are stateless; stateful counts
the calls of its scenarios), the failing checks by name, and the errors (schemathesis's own
trouble with an operation, e.g. a document it cannot generate from).
"""

import collections
import json
import pathlib
import sys


def main() -> None:
    reports = sorted(pathlib.Path(sys.argv[1]).glob("*.ndjson"))
    if not reports:
        print("no report (schemathesis did not run)")
        return
    cases = collections.Counter()
    scenarios = 0
    failures = collections.Counter()
    errors = 0
    for line in reports[-1].read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if finished is None:
            if "NonFatalError" in event:
                errors += 1
            continue
        if finished["status"] == "error":
            errors += 1
        recorder = finished["recorder"]
        phase = finished["phase"]
        cases[phase] += len(recorder.get("cases", {}))
        if phase == "stateful" and recorder.get("cases"):
            scenarios += 1
        seen = set()
        for checks in recorder.get("checks", {}).values():
            for check in checks:
                if check["status"] == "failure":
                    failure = check.get("failure_info", {}).get("failure", {})
                    key = (check["name"], failure.get("operation"), failure.get("title"))
                    if key not in seen:
                        seen.add(key)
                        failures[check["name"]] += 1
    stateless = cases["examples"] + cases["coverage"] + cases["fuzzing"]
    text = (
        f"stateless {stateless} cases (examples {cases['examples']}, coverage {cases['coverage']},"
        f" fuzzing {cases['fuzzing']}); stateful {cases['stateful']} calls in {scenarios} scenarios;"
    )
    if failures:
        text += " failures: " + ", ".join(f"{name} {count}" for name, count in sorted(failures.items()))
    else:
        text += " failures 0"
    text += f"; errors {errors}"
    print(text)


if __name__ == "__main__":
    main()
