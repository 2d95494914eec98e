#!/usr/bin/env bash
# Training parity on a larger generated set: the cinic10 example with
# --model.arch resnet18 and the PyTorch Lightning peer
# (bench/lightning/train_cinic.py, torchvision's resnet18) train from the same
# initial weights, with the same settings (SGD + momentum, lr, weight decay,
# batch size, epochs, no augmentation) and the same shuffled order of batches,
# on the vs_lightning folder of generated PNGs (4000 train / 600 valid / 600
# test). Target: final test accuracies within 1 % of each other. The two sides
# run at the same time, one compute thread and one loader worker each.
#
#   bench/vs_lightning/parity.sh [build-dir]
#   env: EPOCHS (4), BATCH (64), ORDER_SEED (7)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
epochs="${EPOCHS:-4}" batch="${BATCH:-64}" order_seed="${ORDER_SEED:-7}"

# The shared initial weights, written by torchvision's model.
"$python" -c "import sys, torch; sys.path.insert(0, '$root/bench/lightning'); from train_cinic import build
torch.manual_seed(0); torch.save(dict(build('resnet18', 10).state_dict()), '$work/init.pt')"

OMP_NUM_THREADS=1 "$build/bin/cinic10" fit --seed_everything 0 --test_after_fit true \
  --trainer.max_epochs "$epochs" --trainer.accelerator cpu --trainer.enable_progress_bar false \
  --trainer.default_root_dir "$work/ours" --data.root "$data" --data.batch_size "$batch" \
  --data.num_workers 1 --data.augment false --data.seed "$order_seed" \
  --model.arch resnet18 --model.weights "$work/init.pt" --model.lr 0.05 --model.momentum 0.9 \
  --model.weight_decay 0.0005 --model.lr_step_size 0 > "$work/ours.log" 2>&1 &
ours_pid=$!
ours_start=$SECONDS
their_status=0
OMP_NUM_THREADS=1 "$python" "$root/bench/lightning/train_cinic.py" --root "$data" --arch resnet18 \
  --weights "$work/init.pt" --epochs "$epochs" --batch-size "$batch" --lr 0.05 --momentum 0.9 \
  --weight-decay 0.0005 --workers 1 --threads 1 --order-seed "$order_seed" \
  --out "$work/lightning" > "$work/theirs.log" 2>&1 || their_status=$?
our_status=0
wait "$ours_pid" || our_status=$?
if ((our_status != 0 || their_status != 0)); then
  cat "$work/ours.log" "$work/theirs.log" >&2
  echo "parity: a side failed (fulgur exit $our_status, lightning exit $their_status)" >&2
  exit 1
fi

ours_acc="$("$python" -c "import csv, sys
rows = [r['test_acc'] for r in csv.DictReader(open(sys.argv[1])) if r.get('test_acc')]
print(rows[-1])" "$work/ours/fulgur_logs/version_0/metrics.csv")"
their_acc="$(sed -n 's/^test_acc=//p' "$work/theirs.log")"
awk -v a="$ours_acc" -v b="$their_acc" -v e="$epochs" -v n="$batch" -v s="$((SECONDS - ours_start))" 'BEGIN {
  d = a - b; if (d < 0) d = -d
  printf "parity[resnet18, %d epochs, batch %d]: ours test_acc %.4f, lightning test_acc %.4f, difference %.4f (target <= 0.01: %s; %d s)\n",
         e, n, a, b, d, (d <= 0.01 ? "met" : "MISSED"), s }'
