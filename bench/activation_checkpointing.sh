#!/usr/bin/env bash
# bench/activation_checkpointing.sh [BUILD_DIR]: what activation checkpointing
# (the Trainer's activation_checkpointing option: each ShardedUnit's forward
# runs again in backward) saves in memory and costs in step time, on the
# transformer_lm example with one process: peak RSS and step time (mean after
# two warm-up steps) of the plain run and the checkpointed one, and their
# ratios. The model (LAYERS x DIM, default 8 x 128, context 256, batch 16) is
# small and its activations large, so the peak RSS is mostly activations.
# Record the figures in bench/RESULTS.md.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model=(--layers "${LAYERS:-8}" --dim "${DIM:-128}" --heads 4 --context 256 --batch_size 16
       --max_steps "${STEPS:-20}" --limit_val_batches 0 --limit_train_batches 100)

run() {  # $1 = true|false; prints "peak_rss_mib step_s"
  "$build/bin/transformer_lm" --activation_checkpointing "$1" --default_root_dir "$work/$1" "${model[@]}" > "$work/out" 2>&1 ||
    { cat "$work/out"; exit 1; }
  sed -n 's/^transformer_lm rank 0: .* peak_rss_mib \([0-9]*\) step_s \([0-9.e-]*\).*$/\1 \2/p' "$work/out"
}

read -r plain_rss plain_step <<< "$(run false)"
read -r ckpt_rss ckpt_step <<< "$(run true)"
echo "activation_checkpointing: plain        peak RSS ${plain_rss} MiB, ${plain_step} s/step"
printf 'activation_checkpointing: checkpointed peak RSS %s MiB (%.2fx, %d MiB less), %s s/step (%.2fx the time)\n' \
  "$ckpt_rss" "$(awk -v a="$ckpt_rss" -v b="$plain_rss" 'BEGIN { print a / b }')" $((plain_rss - ckpt_rss)) \
  "$ckpt_step" "$(awk -v a="$ckpt_step" -v b="$plain_step" 'BEGIN { print a / b }')"
