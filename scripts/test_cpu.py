#!/usr/bin/env python3
"""Runs the ctest suite as ctest would and measures each test's CPU time.

    scripts/test_cpu.py [BUILD_DIR [JOBS [REGEX]]]

ctest reports wall time only; a test's CPU time (user + system of it and
every process it waited for, from wait4) over its wall time says what it
does: about 1 per rank computes, well under 1 waits (start-up, rendezvous,
sleeps, time-outs). It runs the tests `ctest --show-only=json-v1` lists
(REGEX: only those whose name matches), JOBS slots at once (2), honouring
each test's PROCESSORS, RUN_SERIAL, RESOURCE_LOCK, fixtures (set-up first, clean-up
last), WORKING_DIRECTORY, ENVIRONMENT and TIMEOUT, longest first by the last
ctest run's costs. Work done outside the test's process tree (a SLURM job
that slurmd runs) is not counted. Prints a Markdown table, most CPU first.
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def main():
    build = Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
    jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    pattern = re.compile(sys.argv[3]) if len(sys.argv) > 3 else None
    listed = json.loads(subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, check=True,
                                       capture_output=True, text=True).stdout)["tests"]
    every = {t["name"]: (t["command"], properties(t)) for t in listed}
    chosen = {n for n in every if pattern is None or pattern.search(n)}
    # With the fixtures the chosen tests require (transitively), as ctest adds them.
    while True:
        needed = {f for n in chosen for f in every[n][1].get("FIXTURES_REQUIRED", [])}
        more = {n for n, (_, props) in every.items()
                if set(props.get("FIXTURES_SETUP", []) + props.get("FIXTURES_CLEANUP", [])) & needed} - chosen
        if not more:
            break
        chosen |= more
    tests = {n: every[n] for n in chosen}
    costs = {}
    cost_file = build / "Testing" / "Temporary" / "CTestCostData.txt"
    if cost_file.is_file():
        for line in cost_file.read_text().splitlines():
            fields = line.split()
            if len(fields) == 3:
                costs[fields[0]] = float(fields[2])
    setups, cleanups = {}, {}
    for name, (_, props) in tests.items():
        for fixture in props.get("FIXTURES_SETUP", []):
            setups.setdefault(fixture, set()).add(name)
        for fixture in props.get("FIXTURES_CLEANUP", []):
            cleanups.setdefault(fixture, set()).add(name)
    users = {}
    for name, (_, props) in tests.items():
        for fixture in props.get("FIXTURES_REQUIRED", []):
            users.setdefault(fixture, set()).add(name)

    def ready(name, done):
        props = tests[name][1]
        for fixture in props.get("FIXTURES_REQUIRED", []):
            if not setups.get(fixture, set()) - {name} <= done:
                return False
        for fixture in props.get("FIXTURES_CLEANUP", []):
            if not users.get(fixture, set()) - {name} <= done:
                return False
        return True

    pending = sorted(tests, key=lambda n: -costs.get(n, 0.0))
    suite_started = time.monotonic()
    running, done, results = {}, set(), []
    busy_locks = set()
    free = jobs
    while pending or running:
        for name in list(pending):
            command, props = tests[name]
            # RUN_SERIAL: alone, so every slot (nothing else starts beside it).
            need = jobs if props.get("RUN_SERIAL") in (True, "ON", "TRUE", "1") else min(int(props.get("PROCESSORS", 1)), jobs)
            locks = set(props.get("RESOURCE_LOCK", []))
            if need > free or locks & busy_locks or not ready(name, done):
                continue
            env = dict(os.environ)
            for entry in props.get("ENVIRONMENT", []):
                key, _, value = entry.partition("=")
                env[key] = value
            started = time.monotonic()
            process = subprocess.Popen(command, cwd=props.get("WORKING_DIRECTORY", build), env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            running[process.pid] = (name, process, started, need, locks, float(props.get("TIMEOUT", 1500)))
            free -= need
            busy_locks |= locks
            pending.remove(name)
        pid, status, usage = os.wait4(-1, os.WNOHANG) if running else (0, 0, None)
        if pid == 0:
            now = time.monotonic()
            for name, process, started, _, _, limit in running.values():
                if now - started > limit:
                    os.killpg(process.pid, signal.SIGKILL)
            time.sleep(0.05)
            continue
        if pid not in running:
            continue
        name, _, started, need, locks, _ = running.pop(pid)
        wall = time.monotonic() - started
        free += need
        busy_locks -= locks
        done.add(name)
        cpu = usage.ru_utime + usage.ru_stime
        results.append((name, wall, cpu, need, "passed" if os.waitstatus_to_exitcode(status) == 0 else "FAILED"))
    results.sort(key=lambda r: -r[2])
    print("| test | wall s | CPU s | cores | processors | result |")
    print("|---|---:|---:|---:|---:|---|")
    for name, wall, cpu, need, result in results:
        print(f"| `{name}` | {wall:.1f} | {cpu:.1f} | {cpu / wall if wall > 0 else 0:.2f} | {need} | {result} |")
    total_wall = sum(r[1] for r in results)
    total_cpu = sum(r[2] for r in results)
    print(f"\n{len(results)} tests: {total_wall:.0f} s of test time, {total_cpu:.0f} s of CPU time, "
          f"{time.monotonic() - suite_started:.0f} s in all")


if __name__ == "__main__":
    main()
