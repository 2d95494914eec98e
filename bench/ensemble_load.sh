#!/usr/bin/env bash
# Many client processes at once into fulgur_serve on a loaded machine
# (docs/ensemble.md, "Under load"): N ensemble_client_probe processes (the
# test suite's C solver, 4 messages of 4 samples each, close_timeout 300 s:
# the solver's own 30 s ran out on a starved machine) started together
# against RANKS server ranks (2: under mpirun), with HOGS busy loops beside
# them. The clients start first and wait for the rendezvous file, so all N
# are running when the server starts. Prints the wall time (the server's
# start to its exit, every client done), the load average before and at the end, how many closes were not
# FULGUR_CLIENT_OK, the server's accounting line, the copies it dropped
# (duplicate) against the messages, and the check: every sample received
# once, copies <= 5 % of the messages, every close acknowledged. Writes only
# under a temporary folder. drain_s is 30: with 2 ranks, the first rank whose
# clients all said goodbye ends training on both, and the other waits that
# long for the goodbyes still on their way to it (on a starved node, seconds;
# with 1 s, 9 of 4,096 clients were cut off).
#
#   bench/ensemble_load.sh [N] [RANKS] [HOGS] [BUILD_DIR]     (defaults: 1024, 1, 0, build)
#   LOAD_BELOW=L   first waits (5 minutes at most) for the 1-minute load average to fall below L, so that
#                  one run's thousands of processes do not count in the next one's figure
#   KEEP=1         keeps the run folder (server.log, clients.log, the accounting) and prints its path
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
n="${1:-1024}"
ranks="${2:-1}"
hogs="${3:-0}"
build="$(cd "${4:-$root/build}" && pwd)"
ulimit -n "$(ulimit -Hn)"  # the server raises its own; the launcher's shell holds a pipe per client too
run="$(mktemp -d)"
hog_pids=()
cleanup() {
  for pid in "${hog_pids[@]}"; do kill "$pid" 2> /dev/null || true; done
  if [[ "${KEEP:-}" == 1 ]]; then echo "ensemble_load: kept $run"; else rm -rf "$run"; fi
}
trap cleanup EXIT
trainer=""
[[ "$ranks" == 1 ]] || trainer=", process_group_backend: mpi, strategy: ddp"
cat > "$run/ensemble.yaml" << EOF
model: {type: mlp, layers: [2, 32, 32, 1], activation: tanh}
optimizer: {type: adam, lr: 0.01}
online: {publish_every_n_steps: 10, num_threads: 1}
stream: {capacity: 4096, when_full: replay, batch_size: 32, seed: 3, min_samples: 64}
trainer: {accelerator: cpu, logger: false, enable_checkpointing: false$trainer}
ensemble: {run_dir: $run/run, expected_clients: $n, min_steps: 0, host: 127.0.0.1, drain_s: 30, time_limit_s: 600}
EOF
if [[ -n "${LOAD_BELOW:-}" ]]; then
  for ((i = 0; i < 300; ++i)); do
    awk -v l="$LOAD_BELOW" '{ exit !($1 < l) }' /proc/loadavg && break
    sleep 1
  done
fi
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((h = 0; h < hogs; ++h)); do
  sh -c 'while :; do :; done' &
  hog_pids+=($!)
done
# The clients first: each waits for the rendezvous file, so all N are running when the server starts.
launch=$(date +%s.%N)
pids=()
for ((id = 0; id < n; ++id)); do
  FULGUR_PROBE_CONNECT_TIMEOUT_S=600 "$build/bin/ensemble_client_probe" "$run/run/ensemble.rendezvous" "$id" 16 4 close_timeout 300 \
    > /dev/null 2>> "$run/clients.log" &
  pids+=($!)
done
start=$(date +%s.%N)
if [[ "$ranks" == 1 ]]; then
  "$build/bin/fulgur_serve" --config "$run/ensemble.yaml" > "$run/server.log" 2>&1 &
else
  env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
    "$build/bin/fulgur_serve" --config "$run/ensemble.yaml" > "$run/server.log" 2>&1 &
fi
server=$!
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
server_rc=0
wait "$server" || server_rc=$?
end=$(date +%s.%N)
load_end="$(cut -d' ' -f1-3 /proc/loadavg)"
wall="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
launched="$(awk -v a="$launch" -v b="$start" 'BEGIN { printf "%.1f", b - a }')"
line="$(grep "fulgur: ensemble: .* clients" "$run/server.log" | tail -1 || true)"
duplicates="$(grep -o "duplicate: [0-9]*" "$run/server.log" | tail -1 | cut -d' ' -f2 || true)"
duplicates="${duplicates:-0}"
# Connections a rank saw close without a goodbye (its heartbeat's too: a live client on a starved node
# reconnects and sends its unacknowledged messages again, which the rank drops as copies). Each rank logs
# the first 10.
gone="$(grep -c " gone (" "$run/server.log" || true)"
messages=$((n * 4))
echo "ensemble_load[$n clients, $ranks rank(s), $hogs hog(s)]: $wall s from the server's start (clients started in $launched s before it), $failed close(s) not OK, server exit $server_rc," \
     "duplicate $duplicates of $messages messages, ${gone:-0} client(s) logged gone; load average before $load_before, at the end $load_end;" \
     "$(nproc) cores, ulimit -n $(ulimit -n)"
echo "$line"
samples=$((n * 16))
want="$n clients (0 without a goodbye): $samples samples sent, $samples received, 0 refused, 0 lost"
if [[ "$server_rc" == 0 && "$failed" == 0 && "$line" == *"$want"* && $((duplicates * 20)) -le "$messages" ]]; then
  echo "ensemble_load: ok"
else
  echo "ensemble_load: FAILED (want: $want, every close OK, duplicates <= 5 %)"
  tail -20 "$run/server.log"
  sort "$run/clients.log" | uniq -c | sort -rn | head -5
  exit 1
fi
