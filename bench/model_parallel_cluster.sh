#!/usr/bin/env bash
# bench/model_parallel_cluster.sh BUILD_DIR (root): where the bytes go on a
# simulated cluster (scripts/sim_cluster.sh: 2 nodes x 2 ranks, each
# node's link limited to RATE, default 1gbit, each way) for the
# transformer_lm example (LAYERS x DIM, default 2 x 256, 64 tokens, 8
# sequences per rank): FULL_SHARD over all four ranks against tp 2 within
# each node x dp 2 across the nodes (ddp, then fsdp, along dp). The bytes
# node 1 sent per step (the difference of a 2-step and a 6-step run, so
# set-up is left out) against the least that ring collectives need, in
# bytes, from the parameter count P (4 bytes each; a ring over 0,1 | 2,3
# crosses each node's link once per direction):
#   FULL_SHARD, 4 ranks: 3 collectives (gather for forward, for backward,
#     reduce-scatter) x 3/4 x 4P from node 1              = 9 P
#   tp 2 x dp 2, ddp: each of node 1's 2 ranks all-reduces its half of the
#     gradients with its peer on node 0: 2 x 2 x 1/2 x 2P  = 4 P
#   tp 2 x dp 2, fsdp: 2 ranks x 3 collectives x 1/2 x 2P  = 6 P
#   pp 2 across the nodes x tp 2 within each (ddp along dp 1): only the
#     activations' gradients cross back, [8, 64, DIM] floats from each of
#     node 1's 2 ranks                                       = 2 x 8 x 64 x DIM x 4
# tp's own all-reduces of activations stay within a node. Prints one line
# per run: sent per step, that bound, the ratio to FULL_SHARD's, and the
# step time.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
here="$(cd "$(dirname "$0")/.." && pwd)"
sim="$here/scripts/sim_cluster.sh"
work="$(mktemp -d)"
name="mpb$$"
name="${name:0:8}"
trap 'bash "$sim" down "$name" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
bash "$sim" up "$name" 2 "${RATE:-1gbit}" > /dev/null
model=(--layers "${LAYERS:-2}" --dim "${DIM:-256}" --heads 8 --context 64 --batch_size 8 --limit_val_batches 0
       --enable_checkpointing false --enable_progress_bar false --enable_model_summary false --logger false)

sent_during() {  # $1 = label, $2 = steps, rest: flags; prints "bytes step_s"
  local label="$1" steps="$2"
  shift 2
  local before after
  before="$(bash "$sim" sent "$name" 1)"
  OMP_NUM_THREADS=1 bash "$sim" run "$name" 2 2 "$work/$label-$steps" -- "$build/bin/transformer_lm" --num_nodes 2 \
    --devices 2 --max_steps "$steps" --default_root_dir "$work/$label-$steps" "${model[@]}" "$@" > "$work/out" 2>&1 ||
    { cat "$work/out"; exit 1; }
  after="$(bash "$sim" sent "$name" 1)"
  local step
  step="$(grep -h "^transformer_lm rank" "$work/$label-$steps"/rank*.log | awk '{ t += $9; n++ } END { printf "%.3f", t / n }')"
  echo "$((after - before)) $step"
}

# P from one process's training state (16 bytes per parameter: value, gradient, AdamW's two).
read -r state <<< "$(OMP_NUM_THREADS=1 "$build/bin/transformer_lm" --max_steps 1 --default_root_dir "$work/one" \
  "${model[@]}" 2>&1 | awk '/^transformer_lm rank/ { print $5 }')"
params=$((state / 16))
echo "model_parallel_cluster: $params parameters, link ${RATE:-1gbit} per node, 2 nodes x 2 ranks"
for run in "full 9 --strategy fsdp --fsdp.sharding_strategy FULL_SHARD" \
           "tp2-ddp 4 --strategy model_parallel --model_parallel.tensor_parallel_size 2 --model_parallel.data_parallel ddp" \
           "tp2-fsdp 6 --strategy model_parallel --model_parallel.tensor_parallel_size 2" \
           "pp2-tp2 act --strategy model_parallel --model_parallel.tensor_parallel_size 2 --model_parallel.data_parallel ddp --model_parallel.pipeline_parallel_size 2"; do
  read -r label factor flags <<< "$run"
  # shellcheck disable=SC2086
  read -r short _ <<< "$(sent_during "$label" 2 $flags)"
  # shellcheck disable=SC2086
  read -r long step <<< "$(sent_during "$label" 6 $flags)"
  per=$(( (long - short) / 4 ))
  [ "$label" = full ] && full_per="$per"
  awk -v l="$label" -v per="$per" -v full="$full_per" -v p="$params" -v f="$factor" -v t="$step" -v dim="${DIM:-256}" 'BEGIN {
    bound = f == "act" ? 2 * 8 * 64 * dim * 4 : f * p
    printf "model_parallel_cluster: %-9s node 1 sent %.2f MB per step (%.2f of FULL_SHARD), ring bound %.2f MB (x%.2f), %.3f s/step\n",
      l, per / 1e6, per / full, bound / 1e6, per / bound, t }'
done
