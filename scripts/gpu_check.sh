#!/usr/bin/env bash
# Trains the examples on this machine's first GPU: the checks that CI, which
# has no GPU, cannot run. Builds against the LibTorch of the python3 on PATH
# (or $TORCH_DIR) into build-gpu/ with $CXX (use the distribution's g++) and
# stops at the first failure.
#
#   scripts/gpu_check.sh [build-dir]
#
# Checks: the digits demo on the GPU in float32 (test_acc >= 0.97), with
# float16 autocast + gradient scaler and with bfloat16; resnet18 in
# channels_last from pinned memory; a stop after some steps and an exact
# resume from the checkpoint on the GPU; validate from that checkpoint; ddp
# and horovod strategies over a one-rank NCCL process group.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-gpu}"
cd "$root"
torch_dir="${TORCH_DIR:-$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch}"
nvidia-smi -L
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S . -B "$build" -G Ninja -DTorch_DIR="$torch_dir" -DFULGUR_BUILD_BENCH=OFF -DFULGUR_BUILD_TESTS=OFF \
    -DTORCH_CUDA_ARCH_LIST=9.0 > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
cmake --build "$build" -j"$(nproc)" --target cinic10 fulgur_cuda > "$build.build.log" 2>&1 || { tail -50 "$build.build.log"; exit 1; }

work="$(mktemp -d)"
# Runs one fit/validate; prints its last lines; sets out to its log.
run() {
  local name="$1"
  shift
  out="$work/$name.log"
  echo "== $name: cinic10 $*"
  if ! "$build/bin/cinic10" "$@" --trainer.enable_progress_bar false > "$out" 2>&1; then
    cat "$out"
    echo "gpu_check: $name failed" >&2
    exit 1
  fi
  grep -E "accelerator|device|run folder|^fit:|^test:|^validate:|warning|resum" "$out" | tail -6
}
metric() {  # metric <run folder> <column>: the column's last value in metrics.csv
  awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) col = i; next }
                     col && $col != "" { v = $col } END { print v }' "$1/metrics.csv"
}
run_dir() { sed -n 's/^fulgur: run folder //p' "$out" | tail -n 1; }
check_acc() {
  local acc
  acc="$(metric "$(run_dir)" test_acc)"
  echo "   test_acc $acc"
  awk -v a="$acc" -v m="$1" 'BEGIN { exit !(a >= m) }' || { echo "gpu_check: test_acc $acc below $1" >&2; exit 1; }
}
common=(--config examples/cinic10/digits.yaml --trainer.accelerator gpu --trainer.default_root_dir "$work/runs")

run fp32 fit "${common[@]}" --data.pin_memory true
check_acc 0.97
run fp16 fit "${common[@]}" --trainer.precision 16-mixed
check_acc 0.97
run bf16 fit "${common[@]}" --trainer.precision bf16-mixed
check_acc 0.95
run resnet18 fit "${common[@]}" --model.arch resnet18 --model.channels_last true --data.pin_memory true \
  --trainer.max_epochs 3
check_acc 0.8

# The distributed strategies on one GPU: a real NCCL process group of one rank
# (DDP's bucketed allreduce; Horovod's fusion buffer handed to NCCL).
run ddp fit "${common[@]}" --trainer.strategy ddp --trainer.max_epochs 5
check_acc 0.95
run horovod fit "${common[@]}" --trainer.strategy horovod --trainer.max_epochs 5 --trainer.timeline "$work/timeline.json"
check_acc 0.95
python3 -c "import json, sys; e = json.load(open(sys.argv[1])); e = e['traceEvents'] if isinstance(e, dict) else e; print('   timeline events', len(e)); sys.exit(0 if e else 1)" "$work/timeline.json"

# Exact resume on the GPU: 50 steps + resume to 100 equals 100 straight.
det=(--config examples/cinic10/digits.yaml --trainer.accelerator gpu --trainer.deterministic true
     --trainer.max_epochs -1 --test_after_fit false)
run whole fit "${det[@]}" --trainer.default_root_dir "$work/whole" --trainer.max_steps 100
run first fit "${det[@]}" --trainer.default_root_dir "$work/split" --trainer.max_steps 50
run rest fit "${det[@]}" --trainer.default_root_dir "$work/split" --trainer.max_steps 100 --ckpt_path last
python3 - "$work" <<'PY'
import glob, sys, torch
def last(d):
    return sorted(glob.glob(f"{d}/fulgur_logs/version_*/checkpoints/last.ckpt"))[-1]
a = torch.load(last(sys.argv[1] + "/whole"), weights_only=True)
b = torch.load(last(sys.argv[1] + "/split"), weights_only=True)
assert a["global_step"] == b["global_step"] == 100, (a["global_step"], b["global_step"])
bad = [k for k in a["state_dict"] if not torch.equal(a["state_dict"][k], b["state_dict"][k])]
print("   resume on GPU: parameters", "differ: " + ", ".join(bad) if bad else "bit-identical after 50 + 50 steps")
sys.exit(1 if bad else 0)
PY
run validate validate --config examples/cinic10/digits.yaml --trainer.accelerator gpu \
  --trainer.default_root_dir "$work/split" --ckpt_path last
echo "gpu_check: all checks passed"
