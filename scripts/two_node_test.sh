#!/usr/bin/env bash
# Two simulated hosts: network namespaces joined by a veth pair, each running
# two ranks with SLURM-style variables (num_nodes=2, devices=2). The result
# must equal one process on the same global batch. Needs root (ip netns).
#   scripts/two_node_test.sh <build dir> <output dir>
set -euo pipefail
build="$(cd "$1" && pwd)"
out="$2"
mkdir -p "$out"
tag="f$$"
ns0="$tag-n0"; ns1="$tag-n1"
subnet="10.231.$(( $$ % 200 + 20 ))"
cleanup() { ip netns del "$ns0" 2>/dev/null || true; ip netns del "$ns1" 2>/dev/null || true; }
trap cleanup EXIT

ip netns add "$ns0"
ip netns add "$ns1"
ip link add "$tag-a" type veth peer name "$tag-b"
ip link set "$tag-a" netns "$ns0"
ip link set "$tag-b" netns "$ns1"
ip -n "$ns0" addr add "$subnet.1/24" dev "$tag-a"
ip -n "$ns1" addr add "$subnet.2/24" dev "$tag-b"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$tag-a" up
ip -n "$ns1" link set "$tag-b" up

common=(fit --seed_everything 7 --trainer.accelerator cpu --trainer.max_epochs 2 --trainer.enable_progress_bar false
        --trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 60 --trainer.logger false)

# Reference: one process, global batch 16.
"$build/bin/ddp_probe" "${common[@]}" --data.batch_size 16 --model.output "$out/one.pt" > "$out/one.log" 2>&1

# Four ranks on two hosts, 4 examples each per step.
pids=()
for rank in 0 1 2 3; do
  node=$(( rank / 2 )); local_rank=$(( rank % 2 ))
  ns=$([ "$node" = 0 ] && echo "$ns0" || echo "$ns1")
  ifname=$([ "$node" = 0 ] && echo "$tag-a" || echo "$tag-b")
  # As srun sets them (SLURM_STEP_ID too: without it fulgur refuses a SLURM task not started by srun).
  ip netns exec "$ns" env SLURM_JOB_ID=4242 SLURM_JOB_NAME=two-node SLURM_NTASKS=4 SLURM_NNODES=2 \
    SLURM_STEP_ID=0 SLURM_NTASKS_PER_NODE=2 SLURM_PROCID="$rank" SLURM_LOCALID="$local_rank" SLURM_NODEID="$node" \
    SLURM_NODELIST="host[1-2]" MASTER_ADDR="$subnet.1" MASTER_PORT=29641 GLOO_SOCKET_IFNAME="$ifname" \
    "$build/bin/ddp_probe" "${common[@]}" --trainer.num_nodes 2 --trainer.devices 2 --data.batch_size 4 \
    --model.output "$out/four.pt" > "$out/rank$rank.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
if [ "$status" != 0 ]; then tail -n 5 "$out"/rank*.log; exit "$status"; fi
echo "two_node_test: 4 ranks on 2 namespaces finished"
