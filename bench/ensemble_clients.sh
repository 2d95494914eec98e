#!/usr/bin/env bash
# How many concurrent clients one server rank takes: N heat-rod solvers
# (examples/ensemble's heat_client, 41 samples each) started at once against
# one fulgur_serve rank; prints the wall time, the server's accounting line and
# the file-descriptor limit. Writes only under a temporary folder.
#
#   bench/ensemble_clients.sh [N] [BUILD_DIR]     (defaults: 256, build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n="${1:-256}"
build="$(cd "${2:-$root/build}" && pwd)"
run="$(mktemp -d)"
trap 'rm -rf "$run"' EXIT
sed -e "s|run_dir: run|run_dir: $run|" -e "s|expected_clients: 32|expected_clients: $n|" \
    -e "s|min_steps: 3000|min_steps: 0|" -e "s|, strategy: ddp, process_group_backend: mpi||" \
    "$root/examples/ensemble/ensemble.yaml" > "$run/ensemble.yaml"
start=$(date +%s.%N)
"$build/bin/fulgur_serve" --config "$run/ensemble.yaml" > "$run/server.log" 2>&1 &
server=$!
pids=()
for ((id = 0; id < n; ++id)); do
  "$build/bin/heat_client" "$run/ensemble.rendezvous" "$id" 1.0 1.0 > /dev/null 2>> "$run/clients.log" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
wait "$server" || { tail -5 "$run/server.log"; exit 1; }
end=$(date +%s.%N)
echo "ensemble_clients[$n concurrent clients, 1 server rank]: $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, $failed client(s) failed, ulimit -n $(ulimit -n)"
grep "fulgur: ensemble: .* clients" "$run/server.log"
