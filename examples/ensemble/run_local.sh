#!/usr/bin/env bash
# The ensemble example on one machine: a 2-rank training job (mpirun, over
# process_group_backend mpi) and 32 solver runs in waves of at most 8 at
# once, half of them the C++ client and half the Fortran one, each with its
# own (kappa, A) drawn from a fixed seed; then the surrogate against the
# solver on held-out parameters, and a plot of the error.
#
#   examples/ensemble/run_local.sh [BUILD_DIR] [RUN_DIR]    (defaults: build, a new temporary folder)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
run="${2:-$(mktemp -d)}"
mkdir -p "$run"
sed "s|run_dir: run|run_dir: $run|" "$here/ensemble.yaml" > "$run/ensemble.yaml"

env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root --oversubscribe -np 2 \
  "$build/bin/fulgur_serve" --config "$run/ensemble.yaml" > "$run/server.log" 2>&1 &
server=$!

# 32 runs: kappa in [0.5, 2], A in [0.5, 1.5], from a fixed seed; 8 at a time.
awk 'BEGIN { srand(7); for (i = 0; i < 32; ++i) printf "%d %.4f %.4f\n", i, 0.5 + 1.5 * rand(), 0.5 + rand() }' \
  > "$run/parameters.txt"
status=0
while read -r id kappa amplitude; do
  client="$build/bin/heat_client"
  [[ $((id % 2)) == 1 && -x "$build/bin/heat_client_fortran" ]] && client="$build/bin/heat_client_fortran"
  "$client" "$run/ensemble.rendezvous" "$id" "$kappa" "$amplitude" >> "$run/clients.log" 2>&1 &
  if (( (id + 1) % 8 == 0 )); then wait $(jobs -p | grep -vx "$server") || status=1; fi
done < "$run/parameters.txt"
wait "$server" || { echo "run_local: the training job failed:"; tail -5 "$run/server.log"; exit 1; }
((status == 0)) || { echo "run_local: a client failed:"; tail -5 "$run/clients.log"; exit 1; }
grep "fulgur: ensemble: .* clients" "$run/server.log"
"$build/bin/heat_evaluate" "$run/ensemble.yaml"
if "$root/.venv/bin/python" -c "import matplotlib" 2> /dev/null; then
  "$root/.venv/bin/python" "$here/plot_error.py" "$run/heldout.csv" "$run/error_vs_kappa.png"
fi
echo "run_local: everything is in $run"
