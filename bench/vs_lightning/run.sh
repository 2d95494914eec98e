#!/usr/bin/env bash
# vs_lightning: end-to-end `fit` for a fixed number of epochs on the same
# CINIC-format PNG folder, fulgur's cinic10 example vs the PyTorch Lightning
# peer (bench/lightning/train_cinic.py), same model, batch size, SGD settings
# and compute threads. Each case also times bench/raw_loop.cpp, the same
# steps as a bare LibTorch loop on batches already in memory: Lightning's time
# over that floor is the highest ratio any trainer on LibTorch's kernels could
# reach on the case. Wall time is the whole process on both sides (start-up
# included for both); peak RSS is the main process's (fulgur's loader threads
# are inside it; Lightning loads in its main process with 0 workers, and its
# worker processes, with LIGHTNING_WORKERS > 0, would not be counted).
#
#   bench/vs_lightning/run.sh [build-dir]
#   env: THREADS (2), OURS_WORKERS (2), LIGHTNING_WORKERS (0), CASES ("resnet18_cifar mlp"),
#        (the worker counts are each side's fastest on the 2-core machine of
#        bench/RESULTS.md: Lightning with 0 workers beat 1 and 2 in both
#        cases, fulgur with 2 loader threads beat 0),
#        CHANNELS_LAST (0; 1: the ResNet in channels_last on all three sides),
#        REPEATS (3: runs per side, alternating ours/lightning; the median of
#        the pairs' ratios is reported, as single runs on a shared machine
#        swing by 15 % and the machine may drift during the benchmark),
#        OMP_WAIT_POLICY (unset: each side's default; fulgur's CLI then runs
#        PASSIVE, PyTorch spins. Set it to give both sides the same policy.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
threads="${THREADS:-2}"

# Runs "$@" under GNU time; sets seconds, rss_mb and log.
measure() {
  log="$work/$1.log"
  shift
  if ! OMP_NUM_THREADS="$threads" /usr/bin/time -f "%e %M" -o "$work/time" "$@" > "$log" 2>&1; then
    cat "$log" >&2
    echo "vs_lightning: command failed: $*" >&2
    exit 1
  fi
  read -r seconds rss_kb < "$work/time"
  rss_mb=$(awk -v k="$rss_kb" 'BEGIN { printf "%.0f", k / 1024 }')
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# $1 = case label, $2 = arch, $3 = batch size, $4 = epochs, $5 = train batches per epoch (0: all)
compare() {
  local label="$1" arch="$2" batch="$3" epochs="$4" limit="$5"
  local ours_limit=() their_limit=()
  if ((limit > 0)); then
    ours_limit=(--trainer.limit_train_batches "$limit" --trainer.limit_val_batches 2)
    their_limit=(--limit-train-batches "$limit" --limit-val-batches 2)
  fi
  local train_batches=$(( ($(find "$data/train" -name '*.png' | wc -l) + batch - 1) / batch ))
  local val_batches=$(( ($(find "$data/valid" -name '*.png' | wc -l) + batch - 1) / batch ))
  if ((limit > 0)); then train_batches="$limit" val_batches=2; fi
  local channels_last="${CHANNELS_LAST:-0}" ours_format=false their_format=()
  if ((channels_last)); then ours_format=true their_format=(--channels-last); fi
  local ours_s=() ours_rss=() their_s=() their_rss=() fit_only=() raw_s=()
  for ((run = 1; run <= ${REPEATS:-3}; run++)); do
    measure "ours-$label" "$build/bin/cinic10" fit --seed_everything 0 --test_after_fit false \
      --trainer.max_epochs "$epochs" --trainer.accelerator cpu --trainer.enable_progress_bar false \
      --trainer.default_root_dir "$work/ours-$label-$run" "${ours_limit[@]}" \
      --data.root "$data" --data.batch_size "$batch" --data.num_workers "${OURS_WORKERS:-2}" --data.augment false \
      --model.arch "$arch" --model.lr 0.05 --model.momentum 0.9 --model.weight_decay 0.0005 --model.lr_step_size 0 \
      --model.channels_last "$ours_format"
    ours_s+=("$seconds") ours_rss+=("$rss_mb")
    measure "lightning-$label" "$python" "$root/bench/lightning/train_cinic.py" --root "$data" --arch "$arch" \
      --epochs "$epochs" --batch-size "$batch" --lr 0.05 --momentum 0.9 --weight-decay 0.0005 \
      --workers "${LIGHTNING_WORKERS:-0}" --threads "$threads" --out "$work/lightning-$label-$run" --skip-test "${their_limit[@]}" "${their_format[@]}"
    their_s+=("$seconds") their_rss+=("$rss_mb")
    fit_only+=("$(sed -n 's/^fit_seconds=//p' "$work/lightning-$label.log")")
    measure "raw-$label" "$build/bin/raw_loop" --arch "$arch" --batch_size "$batch" --epochs "$epochs" \
      --train_batches "$train_batches" --val_batches "$val_batches" --threads "$threads" --channels_last "$channels_last"
    raw_s+=("$seconds")
    echo "vs_lightning[$label] run $run: ours ${ours_s[-1]} s, lightning ${their_s[-1]} s, raw loop ${raw_s[-1]} s" >&2
  done
  # The ratio is the median of the runs' pairwise ratios: a pair ran back to
  # back, so a machine that slows down during the benchmark cancels out.
  local ours theirs ours_mb their_mb ratios=()
  for ((i = 0; i < ${#ours_s[@]}; i++)); do
    ratios+=("$(awk -v a="${their_s[i]}" -v b="${ours_s[i]}" 'BEGIN { printf "%.4f", a / b }')")
  done
  ours="$(median "${ours_s[@]}")" theirs="$(median "${their_s[@]}")"
  ours_mb="$(median "${ours_rss[@]}")" their_mb="$(median "${their_rss[@]}")"
  echo "vs_lightning[$label]: ours $ours s, lightning $theirs s, ratio $(awk -v r="$(median "${ratios[@]}")" 'BEGIN { printf "%.2f", r }')" \
    "(medians of ${#ours_s[@]} runs each, ratio of the pairs; lightning Trainer.fit alone $(median "${fit_only[@]}") s)"
  echo "vs_lightning[$label] floor: raw LibTorch loop $(median "${raw_s[@]}") s; lightning / raw $(awk -v a="$theirs" -v b="$(median "${raw_s[@]}")" 'BEGIN { printf "%.2f", a / b }')," \
    "the highest ratio a trainer on LibTorch's kernels could reach"
  echo "vs_lightning[$label] peak RSS: ours $ours_mb MB, lightning $their_mb MB, ratio $(awk -v a="$ours_mb" -v b="$their_mb" 'BEGIN { printf "%.2f", a / b }')"
}

for case in ${CASES:-resnet18_cifar mlp}; do
  case "$case" in
    resnet18_cifar) compare resnet18-cifar-b128 resnet18_cifar 128 2 "${RESNET_BATCHES:-6}" ;;
    mlp) compare mlp-b16 mlp 16 "${MLP_EPOCHS:-2}" 0 ;;
    *) echo "vs_lightning: unknown case '$case'" >&2; exit 2 ;;
  esac
done
