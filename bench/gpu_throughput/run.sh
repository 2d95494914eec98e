#!/usr/bin/env bash
# Training throughput on one GPU, fulgur against its peers in the same run.
# ResNet-50 images/s on the same in-memory batches (channels_last, bf16-mixed
# and 16-mixed): (a) fulgur's Trainer, (b) a bare LibTorch loop, (c) a plain
# PyTorch loop, (d) PyTorch Lightning. The CUDA-graph step (the Trainer's
# cuda_graph option) against the eager one: ResNet-50 bf16-mixed, and a small
# MLP (32-true, batch 64) whose steps are mostly kernel launches. (d')
# Lightning with torch.compile(model), with its compile time. From
# generated JPEGs (500x375) with all cores, ResNet-50 and ResNet-18: (e)
# fulgur decoding on the GPU (decode gpu, nvImageCodec) and (e') on the CPU
# vs (f) torchvision's DataLoader with as many workers and (g)
# torchvision's batched decode_jpeg(device="cuda") + transforms.v2.
#
#   bench/gpu_throughput/run.sh [build] [out-dir]
#
# Prints one line per case and the ratios; writes out-dir/bench.log (every
# case's command and output) and out-dir/bench.md (the figures and ratios as
# Markdown tables; without out-dir, a temporary folder, and the tables are
# printed). Each case runs under `timeout`, and no case starts once the
# budget is spent (it is listed as skipped). Without a visible GPU: one line
# saying it was skipped, exit 0. Exits 1 when a case failed or timed out.
#
# Environment: PYTHON (with torch, torchvision, pytorch_lightning, numpy,
# pillow; default .venv/bin/python where it exists, else python3), STEPS=50 WARMUP=10 (ResNet-50 steps timed / before timing),
# MLP_STEPS=2000 MLP_WARMUP=100, JPEGS=2560, BENCH_BUDGET=600 (seconds for
# the whole run), CASE_TIMEOUT=150 (seconds per case), BENCH_JPEG=1 (0: leave
# out the JPEG cases; scripts/gpu_check.sh measures them first, on its own time).
set -uo pipefail
build="$(cd "${1:-build}" && pwd)"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# $PYTHON; else the checkout's venv where there is one (make bench); else python3.
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
  python=python3
  [[ -x "$src/.venv/bin/python" ]] && python="$src/.venv/bin/python"
fi
peers="$src/bench/gpu_throughput/peers.py"
bench="$build/bin/gpu_throughput"
steps="${STEPS:-50}"
warmup="${WARMUP:-10}"
mlp_steps="${MLP_STEPS:-2000}"
mlp_warmup="${MLP_WARMUP:-100}"
case_timeout="${CASE_TIMEOUT:-150}"
deadline=$(($(date +%s) + ${BENCH_BUDGET:-600}))
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if [[ -n "${2:-}" ]]; then
  mkdir -p "$2"
  out="$(cd "$2" && pwd)"
  show_tables=false
else
  out="$work"
  show_tables=true
fi
log="$out/bench.log"
table="$out/bench.md"
: > "$log"

skip() {
  echo "$1" | tee -a "$log"
  printf '%s\n' "$1" > "$table"
  exit 0
}
if [[ -x "$bench" ]]; then
  probe="$("$bench" --case probe 2>&1 | tail -1)"
  [[ "$probe" == *skipped* ]] && skip "$probe"
elif ! probe="$("$python" -c 'import torch; assert torch.cuda.is_available(); print(torch.cuda.get_device_name(0))' 2>&1)"; then
  skip "gpu_throughput: skipped, no GPU visible to $python ($(tail -1 <<< "$probe"))"
fi
echo "gpu_throughput: $probe; steps $steps after $warmup, mlp $mlp_steps after $mlp_warmup" >> "$log"

declare -A rate note
failed=0
rows=()
# measure KEY LABEL PRECISION CMD...: runs CMD under the time left, its
# output into bench.log; rate[KEY] is the last "N img/s" (or samples/s) it printed.
measure() {
  local key="$1" label="$2" precision="$3"
  shift 3
  local left=$((deadline - $(date +%s))) start output rc seconds last unit=img/s
  rate[$key]=""
  if ((left < 20)); then
    note[$key]="skipped: budget spent"
    rows+=("| $label | $precision | - | - | ${note[$key]} |")
    echo "gpu_throughput[$label, $precision]: ${note[$key]}" | tee -a "$log"
    return 0
  fi
  ((left > case_timeout)) && left=$case_timeout
  start=$(date +%s)
  output="$(timeout -k 10 "$left" "$@" 2>&1)"
  rc=$?
  seconds=$(($(date +%s) - start))
  { echo "== $label, $precision: $*"; printf '%s\n' "$output"; echo "(exit $rc, ${seconds} s)"; } >> "$log"
  rate[$key]="$(sed -n 's/.*: \([0-9.]*\) \(img\|samples\)\/s.*/\1/p' <<< "$output" | tail -1)"
  if ((rc == 124 || rc == 137)); then
    note[$key]="timed out after ${left} s"
  elif ((rc != 0)) || [[ -z "${rate[$key]}" ]]; then
    last="$(grep -v '^\s*$' <<< "$output" | tail -1 | cut -c1-160 | tr '|' '/')"
    note[$key]="failed (exit $rc)${last:+: $last}"
  else
    note[$key]=""
  fi
  if [[ "$*" == *--cuda_graph* ]]; then
    if grep -q "cuda_graph: captured" <<< "$output"; then
      note[$key]="${note[$key]:+${note[$key]}; }step captured"
    else
      note[$key]="${note[$key]:+${note[$key]}; }not captured: $(grep -m1 'fulgur: cuda_graph:' <<< "$output" | cut -c1-160 | tr '|' '/')"
    fi
  fi
  [[ -z "${rate[$key]}" ]] && failed=1
  rows+=("| $label | $precision | ${rate[$key]:--} | $seconds | ${note[$key]} |")
  [[ "$key" == mlp* ]] && unit=samples/s
  local figure="no figure"
  [[ -n "${rate[$key]}" ]] && figure="${rate[$key]} $unit"
  echo "gpu_throughput[$label, $precision]: $figure${note[$key]:+ (${note[$key]})}"
}

ratios=()
# ratio NAME A B TARGET: A/B, printed and kept for the table; TARGET ("" for none) is a minimum.
ratio() {
  local name="$1" a="${rate[$2]}" b="${rate[$3]}" target="$4" value verdict
  if [[ -z "$a" || -z "$b" ]]; then
    value="-"
    verdict="not measured"
  else
    value="$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')"
    if [[ -z "$target" ]]; then
      verdict=""
    elif awk -v v="$value" -v t="$target" 'BEGIN { exit !(v >= t) }'; then
      verdict="met"
    else
      verdict="below target"
    fi
  fi
  ratios+=("| $name | $value | ${target:+>= $target} | $verdict |")
  echo "gpu_throughput: $name $value${target:+ (target >= $target${verdict:+: $verdict})}"
}

resnet=(--steps "$steps" --warmup "$warmup")
mlp=(--case mlp --precision 32-true --steps "$mlp_steps" --warmup "$mlp_warmup")
workers="$(nproc)"

# bf16-mixed first: the figures the CUDA-graph and JPEG comparisons reuse.
measure fulgur_bf16 "fulgur" bf16-mixed "$bench" --case trainer --precision bf16-mixed "${resnet[@]}"
measure bare_bf16 "bare libtorch" bf16-mixed "$bench" --case bare --precision bf16-mixed "${resnet[@]}"
measure torch_bf16 "pytorch loop" bf16-mixed "$python" "$peers" torch --precision bf16-mixed "${resnet[@]}"
measure lightning_bf16 "lightning" bf16-mixed "$python" "$peers" lightning --precision bf16-mixed "${resnet[@]}"
ratio "fulgur/bare, bf16-mixed" fulgur_bf16 bare_bf16 0.98
ratio "fulgur/pytorch loop, bf16-mixed" fulgur_bf16 torch_bf16 ""
ratio "fulgur/lightning, bf16-mixed" fulgur_bf16 lightning_bf16 1.1
measure lightning_compile_bf16 "lightning, torch.compile" bf16-mixed \
  "$python" "$peers" lightning --compile --precision bf16-mixed "${resnet[@]}"
ratio "fulgur/lightning+compile, bf16-mixed" fulgur_bf16 lightning_compile_bf16 ""

measure mlp_eager "mlp" 32-true "$bench" "${mlp[@]}"
measure mlp_graph "mlp, cuda_graph" 32-true "$bench" "${mlp[@]}" --cuda_graph
measure graph_bf16 "fulgur, cuda_graph" bf16-mixed "$bench" --case trainer --precision bf16-mixed "${resnet[@]}" --cuda_graph
ratio "cuda_graph/eager, mlp 32-true" mlp_graph mlp_eager 1.5
ratio "cuda_graph/eager, resnet50 bf16-mixed" graph_bf16 fulgur_bf16 ""

jpeg=(--precision bf16-mixed "${resnet[@]}" --workers "$workers")
bench_jpeg="${BENCH_JPEG:-1}"
if [[ "$bench_jpeg" == 1 ]] && ((deadline - $(date +%s) >= 20)); then
  { echo "== make-jpegs: ${JPEGS:-2560}"; "$python" "$peers" make-jpegs "$work/jpegs" --count "${JPEGS:-2560}" 2>&1; } >> "$log"
fi
[[ "$bench_jpeg" == 1 ]] && for arch in resnet50 resnet18; do
  a=(--arch "$arch")
  if [[ $arch == resnet18 ]]; then
    measure mem_$arch "fulgur in-memory, $arch" bf16-mixed "$bench" --case trainer --precision bf16-mixed "${resnet[@]}" "${a[@]}"
  fi
  measure jpeg_gpu_$arch "fulgur jpeg decode gpu, $arch, $workers workers" bf16-mixed \
    "$bench" --case jpeg --decode gpu --data "$work/jpegs" "${jpeg[@]}" "${a[@]}"
  measure jpeg_cpu_$arch "fulgur jpeg decode cpu, $arch, $workers workers" bf16-mixed \
    "$bench" --case jpeg --decode cpu --data "$work/jpegs" "${jpeg[@]}" "${a[@]}"
  measure tv_gpu_$arch "torchvision decode_jpeg cuda, $arch, $workers workers" bf16-mixed \
    "$python" "$peers" gpu-decode --data "$work/jpegs" "${jpeg[@]}" "${a[@]}"
  measure dataloader_$arch "torchvision dataloader, $arch, $workers workers" bf16-mixed \
    "$python" "$peers" dataloader --data "$work/jpegs" "${jpeg[@]}" "${a[@]}"
done
rate[mem_resnet50]="${rate[fulgur_bf16]}"
[[ "$bench_jpeg" == 1 ]] && for arch in resnet50 resnet18; do
  ratio "fulgur jpeg gpu/in-memory, $arch" jpeg_gpu_$arch mem_$arch 0.9
  ratio "fulgur jpeg gpu/torchvision gpu decode, $arch" jpeg_gpu_$arch tv_gpu_$arch 1.3
  ratio "fulgur jpeg cpu/torchvision dataloader, $arch" jpeg_cpu_$arch dataloader_$arch ""
done

measure fulgur_fp16 "fulgur" 16-mixed "$bench" --case trainer --precision 16-mixed "${resnet[@]}"
measure bare_fp16 "bare libtorch" 16-mixed "$bench" --case bare --precision 16-mixed "${resnet[@]}"
measure torch_fp16 "pytorch loop" 16-mixed "$python" "$peers" torch --precision 16-mixed "${resnet[@]}"
measure lightning_fp16 "lightning" 16-mixed "$python" "$peers" lightning --precision 16-mixed "${resnet[@]}"
ratio "fulgur/bare, 16-mixed" fulgur_fp16 bare_fp16 0.98
ratio "fulgur/pytorch loop, 16-mixed" fulgur_fp16 torch_fp16 ""
ratio "fulgur/lightning, 16-mixed" fulgur_fp16 lightning_fp16 1.1

{
  echo "ResNet-50 batch 256 ($steps steps timed after $warmup), MLP batch 64 ($mlp_steps after $mlp_warmup); $probe"
  echo
  echo "| case | precision | img/s (mlp: samples/s) | seconds | note |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "| ratio | value | target | |"
  echo "|---|---|---|---|"
  printf '%s\n' "${ratios[@]}"
} > "$table"
$show_tables && cat "$table"
exit "$failed"
