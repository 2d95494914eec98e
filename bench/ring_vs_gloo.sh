#!/usr/bin/env bash
# Ring allreduce vs Gloo's allreduce at 4 and 64 MB, measured in the same
# run, plus the point-to-point loopback bandwidth that bounds the ring:
#   ring_vs_gloo[<n> ranks, <S> MB]: ring <x> GB/s, gloo <y> GB/s, ratio <r>
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
ranks="${RANKS:-2}"
busbw() {  # $1 = algo, $2 = size in MB, $3 = iterations
  OMP_NUM_THREADS=1 "$build/bin/allreduce_bench" --algo "$1" --size_mb "$2" --iters "$3" --world_size "$ranks" |
    sed -n 's/.* busbw \([0-9.]*\) GB\/s/\1/p'
}
for size in 4 64; do
  iters=$((size == 4 ? 40 : 8))
  ring="$(busbw ring "$size" "$iters")"
  gloo="$(busbw gloo "$size" "$iters")"
  echo "ring_vs_gloo[$ranks ranks, $size MB]: ring $ring GB/s, gloo $gloo GB/s, ratio $(awk -v a="$ring" -v b="$gloo" 'BEGIN { printf "%.3f", a / b }')"
done
p2p="$(RANKS=2 busbw p2p 64 8)"
echo "ring_vs_gloo: point-to-point loopback $p2p GB/s one way = the ring's busbw bound"
