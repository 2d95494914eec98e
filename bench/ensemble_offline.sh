#!/usr/bin/env bash
# Online against offline on the same samples (docs/ensemble.md): 32 heat-rod
# runs (examples/ensemble, the parameters of run_local.sh), 8 at a time, and
# the time until the surrogate's held-out error (heat_evaluate's) reaches
# TARGET, with the example's model, optimizer, batch and reservoir:
#   online:  one server rank (bench/ensemble_offline.cpp serve) trains while
#            the runs stream to it; no sample is written;
#   offline: the same runs write their samples to files (heat_client
#            --write), then Trainer::fit reads them (ensemble_offline fit).
# Prints both times and their ratio (goal: online <= 0.6 x offline). SUBSTEPS
# makes each solve costlier (the same samples): a solver whose time counts.
# Everything under a temporary folder.
#
#   bench/ensemble_offline.sh [BUILD_DIR] [SUBSTEPS] [TARGET]     (defaults: build, 10000, 0.03)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
substeps="${2:-10000}"
target="${3:-0.03}"
run="$(mktemp -d)"
trap 'rm -rf "$run"' EXIT
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# One rank (the offline fit is one process), the example's model, optimizer, reservoir and stop rule.
sed -e "s|run_dir: run|run_dir: $run/online|" -e "s|, strategy: ddp, process_group_backend: mpi||" \
  "$root/examples/ensemble/ensemble.yaml" > "$run/ensemble.yaml"
awk 'BEGIN { srand(7); for (i = 0; i < 32; ++i) printf "%d %.4f %.4f\n", i, 0.5 + 1.5 * rand(), 0.5 + rand() }' \
  > "$run/parameters.txt"

# The 32 runs in waves of 8: heat_client with the given first arguments (a rendezvous file, or --write DIR).
waves() {
  local pids=() status=0
  while read -r id kappa amplitude; do
    if [[ "$1" == --write ]]; then
      "$build/bin/heat_client" --write "$2/$id.bin" "$id" "$kappa" "$amplitude" "$substeps" &
    else
      "$build/bin/heat_client" "$1" "$id" "$kappa" "$amplitude" "$substeps" > /dev/null &
    fi
    pids+=($!)
    if (( (id + 1) % 8 == 0 )); then
      for pid in "${pids[@]}"; do wait "$pid" || status=1; done
      pids=()
    fi
  done < "$run/parameters.txt"
  return $status
}

"$build/bin/ensemble_offline" serve "$run/ensemble.yaml" "$target" > "$run/server.log" 2>&1 &
server=$!
waves "$run/online/ensemble.rendezvous" || { echo "ensemble_offline: a client failed"; exit 1; }
wait "$server" || { echo "ensemble_offline: the online run failed:"; tail -5 "$run/server.log"; exit 1; }
online=$(grep "ensemble_offline serve:" "$run/server.log")
online_s=$(sed -n 's/.* reached in \([0-9.]*\) s.*/\1/p' <<< "$online")
# What the online run wrote: the accounting and the rendezvous file; no sample.
online_bytes=$(find "$run/online" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')

mkdir "$run/files"
start=$(now)
waves --write "$run/files" || { echo "ensemble_offline: a solver run failed"; exit 1; }
simulate_s=$(since "$start")
sample_bytes=$(find "$run/files" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
fit=$("$build/bin/ensemble_offline" fit "$run/ensemble.yaml" "$run/files" "$target") || { echo "$fit"; exit 1; }
fit_s=$(sed -n 's/.* in \([0-9.]*\) s$/\1/p' <<< "$fit")

echo "$online"
echo "$fit"
awk -v on="$online_s" -v sim="$simulate_s" -v fit="$fit_s" -v e="$target" -v s="$substeps" -v b="$sample_bytes" \
    -v ob="$online_bytes" 'BEGIN {
  printf "ensemble_offline[32 runs, substeps %d, held-out error %.3f]: online %.2f s (wrote %d bytes, no sample); ", s, e, on, ob
  printf "offline %.2f s (the runs writing %d bytes of samples %.2f s, then fit %.2f s): online / offline %.2fx (goal <= 0.6)\n", sim + fit, b, sim, fit, on / (sim + fit)
}'
