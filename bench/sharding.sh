#!/usr/bin/env bash
# bench/sharding.sh BUILD_DIR: per-rank training state (counted bytes of
# parameters, gradients and AdamW state between steps), peak RSS and step
# time of ddp, SHARD_GRAD_OP and FULL_SHARD (both prefetches) for the transformer_lm example
# (LAYERS x DIM, default 8 x 512: 25 M parameters, ~400 MB of state under
# ddp), on 2 and 4 CPU ranks of one intra-op thread each. Prints one line
# per run and the ratios against ddp. Then the deepest model of that width
# that trains (2 steps) on 4 ranks when every process may hold at most
# LIMIT_MIB (default 768) of data (prlimit --data: heap and anonymous
# mappings), for ddp and FULL_SHARD. Record them in bench/RESULTS.md.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model=(--layers "${LAYERS:-8}" --dim "${DIM:-512}" --heads 8 --context 64 --batch_size 2
       --max_steps "${STEPS:-10}" --limit_val_batches 0)

run() {  # $1 = ranks, $2 = strategy, $3 = sharding strategy; prints "state_mb rss_mib step_s" (worst rank)
  # The run ends with a checkpoint: fsdp writes it sharded, as a big model would
  # (a full one gathers the whole state on rank 0).
  local type=full
  [ "$2" = fsdp ] && type=sharded
  local launch=()
  if [ "${BACKEND:-auto}" = mpi ]; then
    launch=(env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS -np "$1")
  fi
  OMP_NUM_THREADS=1 "${launch[@]}" "$build/bin/transformer_lm" --devices "$1" --strategy "$2" \
    --process_group_backend "${BACKEND:-auto}" --fsdp.sharding_strategy "$3" --fsdp.forward_prefetch true \
    --fsdp.state_dict_type "$type" --default_root_dir "$work/$1-$2-$3" "${model[@]}" > "$work/out" 2>&1 ||
    { cat "$work/out"; exit 1; }
  grep "^transformer_lm rank" "$work/out" |
    awk '{ if ($5 > s) s = $5; if ($7 > r) r = $7; t += $9; n++ } END { printf "%.1f %d %.3f", s / 1e6, r, t / n }'
}

# SPEED_ONLY=ddp|FULL_SHARD: one step-time run on 2 ranks (bench/regression_check.py).
# BACKEND=mpi: the step-time runs over process_group_backend mpi, their ranks
# from mpirun (the memory-limited search below stays on the default backend).
if [ -n "${SPEED_ONLY:-}" ]; then
  if [ "$SPEED_ONLY" = ddp ]; then read -r _ _ step <<< "$(run 2 ddp NO_SHARD)"; else read -r _ _ step <<< "$(run 2 fsdp "$SPEED_ONLY")"; fi
  echo "sharding: N=2 $SPEED_ONLY ${step} s/step"
  exit 0
fi

for ranks in 2 4; do
  read -r ddp_state ddp_rss ddp_step <<< "$(run "$ranks" ddp NO_SHARD)"
  echo "sharding: N=$ranks ddp           state ${ddp_state} MB/rank, peak RSS ${ddp_rss} MiB/rank, ${ddp_step} s/step"
  for sharding in SHARD_GRAD_OP FULL_SHARD; do
    read -r state rss step <<< "$(run "$ranks" fsdp "$sharding")"
    printf 'sharding: N=%s %-13s state %s MB/rank (%.2fx ddp), peak RSS %s MiB/rank (%.2fx), %s s/step (speed %.2fx ddp)\n' \
      "$ranks" "$sharding" "$state" "$(awk -v a="$state" -v b="$ddp_state" 'BEGIN { print a / b }')" \
      "$rss" "$(awk -v a="$rss" -v b="$ddp_rss" 'BEGIN { print a / b }')" \
      "$step" "$(awk -v a="$step" -v b="$ddp_step" 'BEGIN { print b / a }')"
  done
done

# The deepest model under a per-process memory limit: FULL_SHARD with its
# least-memory settings (no prefetching, shards kept after fit); a trial
# fails by running out of memory (one clear error, the other ranks stop on
# the lost peer).
limit_mib="${LIMIT_MIB:-768}"
trains() {  # $1 = strategy, $2 = sharding strategy, $3 = layers
  local type=full
  [ "$1" = fsdp ] && type=sharded
  OMP_NUM_THREADS=1 timeout 600 prlimit --data=$((limit_mib << 20)) "$build/bin/transformer_lm" --devices 4 \
    --strategy "$1" --fsdp.sharding_strategy "$2" --fsdp.state_dict_type "$type" --fsdp.whole_after_fit false \
    --fsdp.forward_prefetch false --fsdp.backward_prefetch NONE \
    --default_root_dir "$work/limit-$1-$2-$3" --layers "$3" --dim "${DIM:-512}" --heads 8 --context 64 --batch_size 2 \
    --max_steps 2 --limit_val_batches 0 > "$work/out" 2>&1
}
deepest() {  # $1 = strategy, $2 = sharding strategy: the most layers that train
  local fits=0 fails=1
  while trains "$1" "$2" "$fails"; do fits=$fails; fails=$((fails * 2)); done
  while [ $((fails - fits)) -gt 1 ]; do
    local mid=$(((fits + fails) / 2))
    if trains "$1" "$2" "$mid"; then fits=$mid; else fails=$mid; fi
  done
  echo "$fits"
}
ddp_layers="$(deepest ddp NO_SHARD)"
full_layers="$(deepest fsdp FULL_SHARD)"
printf 'sharding: N=4 under %s MiB of data per process: ddp trains %s blocks, FULL_SHARD %s blocks (%.2fx)\n' \
  "$limit_mib" "$ddp_layers" "$full_layers" "$(awk -v a="$full_layers" -v b="$ddp_layers" 'BEGIN { print a / b }')"
