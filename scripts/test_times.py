#!/usr/bin/env python3
"""The per-test table of docs/development.md, from the last ctest run.

    scripts/test_times.py [BUILD_DIR [CTEST_OUTPUT]]

Reads BUILD_DIR/Testing/Temporary/LastTest.log (each test's wall time as
ctest measured it) and the CTestTestfile.cmake files (its label and the
processors it is given; asking ctest itself would overwrite the log), and
prints a Markdown table, longest first, with the total and the share of the
five longest. A test the last run did not run is left out and named.
CTEST_OUTPUT: what ctest printed instead (`make test 2>&1 | tee log`),
whose "Test #N: name ... Passed 12.3 sec" lines hold the same times.
"""
import re
import sys
from pathlib import Path


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build")
    log = Path(sys.argv[2]) if len(sys.argv) > 2 else build / "Testing" / "Temporary" / "LastTest.log"
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
        printed = re.search(r"Test +#\d+: (\S+) \.+.*?([0-9.]+) sec$", line)
        if printed:
            times[printed.group(1)] = float(printed.group(2))
    properties = {}
    for testfile in build.rglob("CTestTestfile.cmake"):
        for found in re.finditer(r"set_tests_properties\(\[=\[(\S+?)\]=\] PROPERTIES (.*)\)", testfile.read_text()):
            label = re.search(r'LABELS "([^"]*)"', found.group(2))
            processors = re.search(r'PROCESSORS "([0-9]+)"', found.group(2))
            properties[found.group(1)] = (label.group(1) if label else "-", int(processors.group(1)) if processors else 1)
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
