#!/usr/bin/env bash
# bench/model_parallel.sh BUILD_DIR: per-rank memory of strategy
# model_parallel for the transformer_lm example (LAYERS x DIM, default
# 4 x 256, 8 heads, CONTEXT 512 tokens, BATCH 4 sequences per step): the
# training state a rank keeps between steps (parameters, gradients, AdamW
# state: counted bytes) and its peak RSS, on one process and at tp 2 and
# tp 4, with and without sequence parallelism, each rank one intra-op
# thread. Prints one line per run and the ratios against one process:
# state(tp) / state(1) should be about 1/tp (the embeddings' positions and
# the norms stay whole); the RSS above a run of the same model with a
# context of 16 tokens is the activations'. Sequence parallelism splits the
# [batch, tokens, width] activations of the norms and residuals, which
# matter where the attention's do not (Megatron-LM's count per layer:
# s b h (34 + 5 a s / h) without tp): try LAYERS=2 DIM=512 CONTEXT=64
# BATCH=32. Record them in bench/RESULTS.md.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model=(--layers "${LAYERS:-4}" --dim "${DIM:-256}" --heads 8 --batch_size "${BATCH:-4}" --max_steps "${STEPS:-4}"
       --limit_val_batches 0 --enable_checkpointing false)

run() {  # $1 = ranks, $2 = tp, $3 = sequence_parallel, $4 = context; prints "state_mb rss_mib step_s" (worst rank)
  local strategy=(--strategy single_device)
  [ "$1" -gt 1 ] && strategy=(--strategy model_parallel --model_parallel.tensor_parallel_size "$2")
  OMP_NUM_THREADS=1 "$build/bin/transformer_lm" --devices "$1" "${strategy[@]}" --sequence_parallel "$3" \
    --context "$4" --default_root_dir "$work/$1-$2-$3-$4" "${model[@]}" > "$work/out" 2>&1 || { cat "$work/out"; exit 1; }
  grep "^transformer_lm rank" "$work/out" |
    awk '{ if ($5 > s) s = $5; if ($7 > r) r = $7; t += $9; n++ } END { printf "%.1f %d %.3f", s / 1e6, r, t / n }'
}

context="${CONTEXT:-512}"
read -r base_state base_rss base_step <<< "$(run 1 1 false "$context")"
read -r _ base_small _ <<< "$(run 1 1 false 16)"
echo "model_parallel: 1 process: state ${base_state} MB, peak RSS ${base_rss} MiB (context 16: ${base_small}), ${base_step} s/step"
for tp in 2 4; do
  for sp in false true; do
    read -r state rss step <<< "$(run "$tp" "$tp" "$sp" "$context")"
    read -r _ small _ <<< "$(run "$tp" "$tp" "$sp" 16)"
    awk -v tp="$tp" -v sp="$sp" -v s="$state" -v r="$rss" -v small="$small" -v t="$step" -v bs="$base_state" \
        -v br="$base_rss" -v bsmall="$base_small" 'BEGIN {
      printf "model_parallel: tp %d sequence_parallel %s: state %.1f MB (%.3f of one process, 1/tp = %.3f), peak RSS %d MiB, activations %d MiB (%.2f of one process), %.3f s/step\n",
        tp, sp, s, s / bs, 1 / tp, r, r - small, (r - small) / (br - bsmall), t }'
  done
done
