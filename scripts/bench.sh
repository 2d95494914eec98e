#!/usr/bin/env bash
# Runs every benchmark once; each prints its ratio against a peer measured
# in the same run. Record results in bench/RESULTS.md.
set -euo pipefail
# Idle OpenMP threads sleep in the programs run here too, not only in the
# ranks they start: the runtime reads this at start-up, and fulgur never
# restarts a program to set it.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$build/bin/trainer_overhead"
"$build/bin/tensorboard_overhead"
"$build/bin/checkpoint_save" --dir "$work"
# A metric object's update() against the same counts made by hand in the step.
"$build/bin/metric_update_bench"

# ddp_scaling: 1 process x 1 thread vs 2 processes x 1 thread each, same
# per-process batch; then 2 processes with one big gradient bucket (allreduce
# after backward) to see how much communication the buckets hide.
scaling() {  # $1 = devices, $2 = report file, rest = extra options
  local devices="$1" report="$2"
  shift 2
  OMP_NUM_THREADS=1 "$build/bin/ddp_scaling" fit --seed_everything 0 --trainer.accelerator cpu \
    --trainer.devices "$devices" --trainer.max_epochs 4 --trainer.logger false --trainer.enable_progress_bar false \
    --data.batch_size "${BATCH:-1024}" --data.batches 12 --model.report "$report" "$@" > /dev/null
}
mean() { awk -v col="$2" '{ s += $col; n++ } END { printf "%.4g", s / n }' "$1"; }
scaling 1 "$work/one"
scaling 2 "$work/two"
scaling 2 "$work/single" --trainer.bucket_cap_mb 100000
one="$(mean "$work/one" 2)"
two="$(mean "$work/two" 2)"
echo "ddp_scaling: 1proc $one samples/s, 2proc $two samples/s, ratio $(awk -v a="$two" -v b="$one" 'BEGIN { printf "%.3f", a / b }')"
bucketed_wait="$(mean "$work/two" 3)"
single_wait="$(mean "$work/single" 3)"
echo "ddp_overlap: allreduce wait after backward $(awk -v w="$bucketed_wait" 'BEGIN { printf "%.2f", w * 1000 }') ms/step" \
  "bucketed vs $(awk -v w="$single_wait" 'BEGIN { printf "%.2f", w * 1000 }') ms/step as one bucket after backward;" \
  "hidden fraction $(awk -v a="$bucketed_wait" -v b="$single_wait" 'BEGIN { printf "%.2f", (b > 0 ? 1 - a / b : 0) }')"

# loader_vs_torchvision: our image pipeline (loader_bench) vs torchvision's
# ImageFolder + DataLoader, same generated images, transforms and CPU cores.
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$src/.venv/bin/python" "$src/bench/loader_vs_torchvision" "$build"
# Horovod-style ring allreduce vs Gloo's allreduce.
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/ring_vs_gloo.sh" "$build"
# sharding: ddp vs SHARD_GRAD_OP vs FULL_SHARD on the transformer_lm example.
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/sharding.sh" "$build"
# activation checkpointing: memory saved, step time paid (transformer_lm).
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/activation_checkpointing.sh" "$build"
# cluster_scaling: DDP buckets vs the Horovod ring on a simulated cluster
# with tc-limited links, and the scaling model against both (root: netns).
if [ "$(id -u)" = 0 ]; then
  python3 "$src/bench/cluster_scaling.py" "$build"
else
  echo "cluster_scaling: skipped, it needs root for network namespaces"
fi
# vs_lightning: end-to-end fit against PyTorch Lightning on a generated
# 32x32 CINIC-format folder (resnet18-cifar batch 128, MLP batch 16).
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/vs_lightning/run.sh" "$build"
# ResNet-50 images/s on one GPU against a bare loop, PyTorch and Lightning
# (one line saying it skipped where no GPU is visible).
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/gpu_throughput/run.sh" "$build"
# Training parity with Lightning on the same generated folder (final test
# accuracies within 1 %).
bash "$(dirname "${BASH_SOURCE[0]}")/../bench/vs_lightning/parity.sh" "$build"
