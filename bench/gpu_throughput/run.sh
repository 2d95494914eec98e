#!/usr/bin/env bash
# ResNet-50 training images/s on one GPU, fulgur against its peers in the
# same run: (a) fulgur's Trainer, (b) a bare LibTorch loop, (c) a plain
# PyTorch loop, (d) PyTorch Lightning, all on the same in-memory batches,
# for bf16-mixed and 16-mixed; then from generated JPEGs (500x375) with all
# cores: (e) fulgur's pipeline vs (f) torchvision's DataLoader with as many
# workers. Prints one line per case and the ratios; without a visible GPU
# one line saying it was skipped, exit 0.
#
#   bench/gpu_throughput/run.sh [build]        (STEPS=50 WARMUP=10 JPEGS=2560)
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="$src/.venv/bin/python"
peers="$src/bench/gpu_throughput/peers.py"
bench="$build/bin/gpu_throughput"
steps="${STEPS:-50}"
warmup="${WARMUP:-10}"

probe="$("$bench" --case bare --steps 0 --warmup 0)"
if [[ "$probe" == *skipped* ]]; then
  echo "$probe"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rate() { sed -n 's/.*: \([0-9.]*\) img\/s.*/\1/p' | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

for precision in bf16-mixed 16-mixed; do
  common=(--precision "$precision" --steps "$steps" --warmup "$warmup")
  a="$("$bench" --case trainer "${common[@]}" | rate)"
  b="$("$bench" --case bare "${common[@]}" | rate)"
  c="$("$python" "$peers" torch "${common[@]}" | rate)"
  d="$("$python" "$peers" lightning "${common[@]}" | rate)"
  echo "gpu_throughput[fulgur, $precision]: $a img/s"
  echo "gpu_throughput[bare libtorch, $precision]: $b img/s"
  echo "gpu_throughput[pytorch loop, $precision]: $c img/s"
  echo "gpu_throughput[lightning, $precision]: $d img/s"
  echo "gpu_throughput[$precision]: fulgur/bare $(ratio "$a" "$b") (target >= 0.98), fulgur/lightning $(ratio "$a" "$d") (target >= 1)"
done

workers="$(nproc)"
"$python" "$peers" make-jpegs "$work/jpegs" --count "${JPEGS:-2560}"
common=(--precision bf16-mixed --steps "$steps" --warmup "$warmup" --workers "$workers")
in_memory="$("$bench" --case trainer --precision bf16-mixed --steps "$steps" --warmup "$warmup" | rate)"
e="$("$bench" --case jpeg --data "$work/jpegs" "${common[@]}" | rate)"
f="$("$python" "$peers" dataloader --data "$work/jpegs" "${common[@]}" | rate)"
echo "gpu_throughput[fulgur jpeg, $workers workers]: $e img/s"
echo "gpu_throughput[torchvision dataloader, $workers workers]: $f img/s"
echo "gpu_throughput[jpeg]: fulgur jpeg/in-memory $(ratio "$e" "$in_memory") (target >= 0.9), fulgur/torchvision $(ratio "$e" "$f")"
