#!/usr/bin/env bash
# Trains the default example end to end: fit on the digits exported in the
# CINIC-10 layout, then test in the same run folder; prints where it is.
set -euo pipefail
# Idle OpenMP threads sleep in the programs run here too, not only in the
# ranks they start: the runtime reads this at start-up, and fulgur never
# restarts a program to set it.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-build}"
cd "$root"

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"$build/bin/cinic10" fit --config examples/cinic10/digits.yaml | tee "$log"

run_dir="$(sed -n 's/^fulgur: run folder //p' "$log" | tail -n 1)"
[[ -n "$run_dir" && -f "$run_dir/metrics.csv" ]] || { echo "demo: no metrics.csv was written" >&2; exit 1; }

# test_acc is the last row's test_acc column of metrics.csv.
test_acc="$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "test_acc") col = i; next }
                      col && $col != "" { v = $col } END { print v }' "$run_dir/metrics.csv")"
echo
echo "demo: run folder $run_dir"
echo "demo: test_acc $test_acc (from $run_dir/metrics.csv)"
awk -v a="$test_acc" 'BEGIN { exit !(a >= 0.97) }' || { echo "demo: test_acc below 0.97" >&2; exit 1; }
