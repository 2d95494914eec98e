#!/usr/bin/env bash
# Runs every benchmark once; each prints its ratio against a peer measured
# in the same run. Record results in bench/RESULTS.md.
set -euo pipefail
build="${1:-build}"
"$build/bin/trainer_overhead"
