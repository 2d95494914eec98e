#!/usr/bin/env bash
# Ring allreduce vs Gloo's allreduce at 4 and 64 MB, plus the loopback
# bandwidths that bound the ring. On a shared machine single runs swing by
# 2x, so ring and Gloo runs alternate REPEATS times and the medians are
# compared:
#   ring_vs_gloo[<n> ranks, <S> MB]: ring <x> GB/s, gloo <y> GB/s, ratio <r>
# (x, y: medians; each run's pair is printed above it). `uptime` before and
# after says how loaded the machine was.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
ranks="${RANKS:-2}"
repeats="${REPEATS:-5}"
busbw() {  # $1 = algo, $2 = size in MB, $3 = iterations, $4 = ranks
  OMP_NUM_THREADS=1 "$build/bin/allreduce_bench" --algo "$1" --size_mb "$2" --iters "$3" --world_size "$4" |
    sed -n 's/.* busbw \([0-9.]*\) GB\/s/\1/p'
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "ring_vs_gloo: load before: $(uptime)"
for size in 4 64; do
  iters=$((size == 4 ? 40 : 12))
  rings="" gloos=""
  for _ in $(seq "$repeats"); do
    ring="$(busbw ring "$size" "$iters" "$ranks")"
    gloo="$(busbw gloo "$size" "$iters" "$ranks")"
    echo "  run: ring $ring GB/s, gloo $gloo GB/s"
    rings="$rings $ring" gloos="$gloos $gloo"
  done
  ring="$(echo "$rings" | median)" gloo="$(echo "$gloos" | median)"
  echo "ring_vs_gloo[$ranks ranks, $size MB]: ring $ring GB/s, gloo $gloo GB/s, ratio $(awk -v a="$ring" -v b="$gloo" 'BEGIN { printf "%.3f", a / b }')"
done
p2ps="" exchanges=""
for _ in $(seq "$repeats"); do
  p2ps="$p2ps $(busbw p2p 64 12 2)" exchanges="$exchanges $(busbw exchange 64 12 2)"
done
echo "ring_vs_gloo: point-to-point loopback $(echo "$p2ps" | median) GB/s one way (one stream)"
echo "ring_vs_gloo: two-way exchange $(echo "$exchanges" | median) GB/s = the 2-rank ring's busbw bound (its data movement without the reduction)"
echo "ring_vs_gloo: load after: $(uptime)"
