#!/usr/bin/env python3
"""The per-test table of docs/development.md, from the last ctest run.

    scripts/test_times.py [BUILD_DIR]

Reads BUILD_DIR/Testing/Temporary/LastTest.log (each test's wall time as
ctest measured it) and `ctest --show-only=json-v1` (its label and the
processors it is given), and prints a Markdown table, longest first, with
the total and the share of the five longest. A test the last run did not
run is left out and named.
"""
import json
import re
import subprocess
import sys
from pathlib import Path


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build")
    log = build / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        sys.exit(f"{log}: no ctest run to read (run ctest in {build} first)")
    times, name = {}, None
    for line in log.read_text(errors="replace").splitlines():
        started = re.match(r"^\d+/\d+ Test: (\S+)$", line)
        if started:
            name = started.group(1)
        took = re.match(r"^Test time =\s*([0-9.]+) sec", line)
        if took and name:
            times[name] = float(took.group(1))
            name = None
    shown = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                      capture_output=True, text=True).stdout)
    properties = {}
    for test in shown["tests"]:
        found = {p["name"]: p["value"] for p in test.get("properties", [])}
        properties[test["name"]] = (",".join(found.get("LABELS", [])) or "-", found.get("PROCESSORS", 1))
    missing = sorted(set(properties) - set(times))
    print("| test | seconds | label | processors |")
    print("|---|---:|---|---:|")
    for test, seconds in sorted(times.items(), key=lambda item: -item[1]):
        label, processors = properties.get(test, ("-", 1))
        print(f"| `{test}` | {seconds:.1f} | {label} | {processors} |")
    total = sum(times.values())
    top = sum(sorted(times.values(), reverse=True)[:5])
    print(f"\n{len(times)} tests, {total:.0f} s of test time in all (the five longest: {top:.0f} s, "
          f"{100 * top / max(total, 1e-9):.0f} %).")
    if missing:
        print(f"Not in the last run: {', '.join(missing)}.")


if __name__ == "__main__":
    main()
