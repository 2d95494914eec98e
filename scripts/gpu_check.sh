#!/usr/bin/env bash
# The checks and benchmarks that need a GPU (CI has none), in two commands of
# at most about 8 minutes each, every result written under REPORT_DIR:
#
#   scripts/gpu_check.sh build REPORT_DIR [BUILD_DIR]
#   scripts/gpu_check.sh run   REPORT_DIR [BUILD_DIR]
#
# build: sources .gpu-kit/env.sh when present (scripts/gpu_kit.sh), configures
#   BUILD_DIR (default build/gpu-check) with Ninja, Release, LibTorch of
#   $PYTHON (default python3; or $TORCH_DIR), sm_90, ${CXX:-/usr/bin/g++}
#   (the distribution's g++: one that links parts of its own libstdc++ made
#   LibTorch's destructors crash at exit) and builds only what `run` needs:
#   the library, cinic10, gpu_throughput, imagenet, ddp_probe, fsdp_probe,
#   transformer_lm, sequence_classifier, heat_insitu (with MPI), fulgur_cuda and
#   fulgur_mpi (with the kit's Open MPI).
#   REPORT_DIR/report.md (a line per step), build.log.
# run: without a GPU (nvidia-smi -L fails, or torch sees none) writes "no GPU
#   visible: skipped" and exits 0. Otherwise runs every check under
#   `timeout`, goes on after a failure and exits 1 at the end if one failed.
#   First, alone and with their own time (GPU_CHECK_JPEG seconds, default
#   170), the JPEG checks on generated 500x375 JPEGs, 20 batches of 256 per
#   epoch: jpeg_throughput (ResNet-50 bf16-mixed img/s decoding on the GPU
#   with persistent workers, against in-memory batches and torchvision's GPU
#   decode, and the decode engines' counts), jpeg_imagenet (the shipped
#   examples/imagenet config through its own command line with decode gpu:
#   its img/s, its per-epoch engine lines, no pinning error) and
#   jpeg_parity (GPU decode against the CPU decode of the same crops).
#   Then the digits demo in float32 (from pinned memory), 16-mixed and bf16-mixed;
#   the same with the CUDA-graph step (captured, same accuracy) and the eager
#   fallback's reason (gradient clipping); resnet18 in channels_last; ddp,
#   horovod (a timeline) and fsdp over a one-rank NCCL group; the quiet-step
#   counters (no host read outside logging steps, ddp_probe); a run stopped
#   after 50 steps and resumed, bit-identical to 100 straight steps;
#   validate from that checkpoint; scale_batch_size on ResNet-50 at 1024x1024
#   until a trial runs out of memory, then a fit at the size found; issue
#   53's checks in a fourth lane: activation checkpointing on transformer_lm
#   (peak CUDA memory <= 0.6x at <= 1.4x the step time), cuda_graph on and off
#   on sequence_classifier and transformer_lm (samples/s, equal loss), ddp,
#   horovod and fsdp with 2 ranks sharing the GPU over Gloo
#   (process_group_backend gloo; weights equal 1 rank's), ddp and fsdp with 2
#   ranks under mpirun over process_group_backend mpi (the same), ThroughputMonitor's
#   and DeviceStatsMonitor's GPU columns, and heat_insitu training on the GPU
#   (the simulation's step time alone and while training), and a program
#   that seeds with torch::manual_seed before its Trainer (late_cuda: the
#   Trainer's error must name that cause); then
#   bench/gpu_throughput/run.sh. REPORT_DIR/report.md (a line per check:
#   verdict, key figure, seconds; the benchmark tables), run.log (every
#   command and its output), bench.log and bench.md.
#
# The digits checks need data/digits-cinic (scripts/setup.sh exports it;
# copy it along to a machine without scikit-learn). Independent checks run in
# four lanes at once (single device; NCCL; resume; issue 53); scale_batch_size and the
# benchmarks run alone. Environment: PYTHON, CXX, TORCH_DIR,
# GPU_CHECK_BUDGET (seconds a phase may take, default 470), GPU_CHECK_BENCH
# (seconds of it kept for the benchmarks, default 210), GPU_CHECK_ONLY
# (names of the checks to run, space-separated; "bench" for the benchmarks),
# GPU_CHECK_JPEG (seconds for the JPEG checks, default 170),
# STEPS, WARMUP, MLP_STEPS, MLP_WARMUP for run.sh (whose own JPEG cases the
# JPEG checks replace), and
# GPU_CHECK_ACCELERATOR=cpu: rehearse the run phase's plumbing without a GPU
# (slow; its figures and several verdicts mean nothing there).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: scripts/gpu_check.sh build|run REPORT_DIR [BUILD_DIR]"
phase="${1:?$usage}"
[[ "$phase" == build || "$phase" == run ]] || { echo "$usage" >&2; exit 2; }
[[ -n "${2:-}" ]] || { echo "$usage" >&2; exit 2; }
mkdir -p "$2"
report="$(cd "$2" && pwd)"
build="${3:-$root/build/gpu-check}"
mkdir -p "$build"
build="$(cd "$build" && pwd)"
cd "$root" || exit 2
PYTHON="${PYTHON:-python3}"
start=$(date +%s)
deadline=$((start + ${GPU_CHECK_BUDGET:-470}))
kit=false
if [[ -f "$root/.gpu-kit/env.sh" ]]; then
  # shellcheck source=/dev/null
  source "$root/.gpu-kit/env.sh"
  kit=true
fi

now() { date +%s; }
# A Markdown table cell: one line, no pipes, at most 200 characters.
cell() { tr '\n|' ' /' <<< "$1" | sed 's/ *$//' | cut -c1-200; }
results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
# result NAME VERDICT FIGURE SECONDS: one line of the report's table.
result() {
  printf '| %s | %s | %s | %s |\n' "$1" "$2" "$(cell "$3")" "$4" >> "$results/rows"
  printf 'gpu_check: %-22s %-4s %s (%s s)\n' "$1" "$2" "$(cell "$3")" "$4"
}

if [[ "$phase" == build ]]; then
  log="$report/build.log"
  : > "$log"
  {
    echo "== environment"
    uname -srm
    "${CXX:-/usr/bin/g++}" --version 2>&1 | head -1
    cmake --version | head -1
    echo "ninja $(ninja --version)"
    { command -v nvcc > /dev/null && nvcc --version | tail -2; } || echo "no nvcc on the PATH"
    nvidia-smi -L 2>&1 || true
    echo "nproc $(nproc); kit: $kit; FULGUR_KIT_CMAKE_ARGS=${FULGUR_KIT_CMAKE_ARGS:-}"
  } >> "$log" 2>&1
  torch_dir="${TORCH_DIR:-$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>> "$log")/Torch}"
  args=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir"
        -DTORCH_CUDA_ARCH_LIST=9.0 -DCMAKE_CXX_COMPILER="${CXX:-/usr/bin/g++}" -DFULGUR_BUILD_BENCH=ON)
  # CMakeLists looks for nvcc in /usr/local/cuda only.
  if [[ ! -x /usr/local/cuda/bin/nvcc ]] && command -v nvcc > /dev/null; then
    args+=(-DCMAKE_CUDA_COMPILER="$(command -v nvcc)")
  fi
  $kit && args+=(-DFULGUR_WITH_HDF5=OFF)
  # A machine with its own libjpeg headers (Ubuntu's libjpeg-turbo8, API 80) finds
  # them before the kit's (API 62): header and library must be the same one.
  sys_jpeg="$(ls /usr/lib/x86_64-linux-gnu/libjpeg.so /usr/lib/x86_64-linux-gnu/libjpeg.so.8 2> /dev/null | head -1)"
  if $kit && [[ -f /usr/include/jpeglib.h && -n "$sys_jpeg" ]]; then
    args+=(-DJPEG_INCLUDE_DIR=/usr/include -DJPEG_LIBRARY_RELEASE="$sys_jpeg" -DJPEG_LIBRARY="$sys_jpeg")
  fi
  read -r -a kit_args <<< "${FULGUR_KIT_CMAKE_ARGS:-}"
  args+=("${kit_args[@]}")
  # configure [TESTS]: cmake with -DFULGUR_BUILD_TESTS=TESTS, a row in the report.
  configure() {
    local t0 rc
    t0=$(now)
    echo "== cmake ${args[*]} -DFULGUR_BUILD_TESTS=$1" >> "$log"
    timeout -k 10 240 cmake "${args[@]}" -DFULGUR_BUILD_TESTS="$1" >> "$log" 2>&1
    rc=$?
    if ((rc == 0)); then
      result "configure (tests $1)" PASS "Torch_DIR $torch_dir" $(($(now) - t0))
    else
      result "configure (tests $1)" FAIL "exit $rc: $(grep -m1 -E 'CMake Error|error:' "$log")" $(($(now) - t0))
    fi
    return $rc
  }
  # With the tests, ddp_probe (the quiet-step check); without them, the rest still builds.
  configure ON || configure OFF
  if [[ -f "$build/build.ninja" ]]; then
    all_targets="$(ninja -C "$build" -t targets all 2>/dev/null | sed -n 's/^\([A-Za-z0-9_]*\): phony$/\1/p')"
    targets=(fulgur cinic10 gpu_throughput imagenet)
    for t in fulgur_cuda fulgur_mpi ddp_probe fsdp_probe host_probe transformer_lm sequence_classifier heat_insitu; do
      grep -qx "$t" <<< "$all_targets" && targets+=("$t")
    done
    left=$((deadline - $(now) - 15))
    ((left < 30)) && left=30
    t0=$(now)
    echo "== cmake --build $build -j$(nproc) --target ${targets[*]} -- -k 0 (at most $left s)" >> "$log"
    # -k 0: one target that does not compile leaves the others built.
    timeout -k 10 "$left" cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" -- -k 0 >> "$log" 2>&1
    rc=$?
    seconds=$(($(now) - t0))
    if ((rc == 124 || rc == 137)); then
      result build FAIL "timed out after $left s" "$seconds"
    elif ((rc != 0)); then
      result build FAIL "exit $rc: $(grep -m1 -E 'error:|FAILED:' "$log")" "$seconds"
    else
      result build PASS "${targets[*]} with -j$(nproc)" "$seconds"
    fi
    for t in "${targets[@]}"; do
      case "$t" in
        fulgur) file="$(find "$build" "$build/lib" -maxdepth 1 -name 'libfulgur.*' 2>/dev/null | head -1)" ;;
        fulgur_cuda | fulgur_mpi) file="$(find "$build/lib" -maxdepth 1 -name "lib$t.*" 2>/dev/null | head -1)" ;;
        *) file="$build/bin/$t" ;;
      esac
      if [[ -n "$file" && -f "$file" ]]; then
        result "  $t" PASS "${file#"$build"/}" -
      else
        result "  $t" FAIL "not built" -
      fi
    done
  fi
  fails=$(grep -c '| FAIL |' "$results/rows")
  {
    echo "# GPU check: build ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Build folder \`$build\`, $("${CXX:-/usr/bin/g++}" --version 2>&1 | head -1), $(nproc) cores, kit: $kit."
    echo
    echo "| step | verdict | key figure | seconds |"
    echo "|---|---|---|---|"
    cat "$results/rows"
    echo
    echo "Total $(($(now) - start)) s."
    if grep -q -E 'error:|FAILED:|CMake Error' "$log"; then
      echo
      echo "First errors in build.log:"
      echo
      echo '```'
      grep -E -m 20 'error:|FAILED:|CMake Error' "$log" | cut -c1-300
      echo '```'
    fi
    echo
    echo "build.log, last lines:"
    echo
    echo '```'
    tail -n 30 "$log" | cut -c1-300
    echo '```'
  } > "$report/report.md"
  echo "gpu_check: build: $fails failed; report $report/report.md"
  ((fails == 0))
  exit
fi

# ---------------------------------------------------------------- run
log="$report/run.log"
: > "$log"
bin="$build/bin"
skipped() {
  local line="no GPU visible: skipped ($1)"
  printf '# GPU check: run\n\n%s\n' "$line" > "$report/report.md"
  echo "$line" | tee -a "$log"
  exit 0
}
acc="${GPU_CHECK_ACCELERATOR:-gpu}"
if [[ "$acc" != gpu ]]; then
  # A rehearsal of this script on another accelerator: the plumbing, not the GPU.
  gpus="rehearsal with --trainer.accelerator $acc"
  torch_gpu="no GPU check"
  probe="not probed"
elif ! command -v nvidia-smi > /dev/null; then
  skipped "no nvidia-smi on the PATH"
elif ! gpus="$(nvidia-smi -L 2>&1)"; then
  skipped "nvidia-smi -L: $(cell "$(tail -1 <<< "$gpus")")"
elif ! torch_gpu="$("$PYTHON" scripts/gpu_check.py gpu 2>&1)"; then
  skipped "$PYTHON: $(cell "$(tail -1 <<< "$torch_gpu")")"
else
  probe="gpu_throughput not built"
  if [[ -x "$bin/gpu_throughput" ]]; then
    probe="$(timeout 120 "$bin/gpu_throughput" --case probe 2>&1 | tail -1)"
    if [[ "$probe" == *skipped* ]]; then
      # nvidia-smi and torch see the GPU, fulgur does not: fulgur's fault, not the machine's.
      printf '# GPU check: run\n\n%s\n\nFAIL: nvidia-smi and torch see a GPU (%s), fulgur does not: %s\n' \
        "$gpus" "$torch_gpu" "$probe" > "$report/report.md"
      echo "gpu_check: FAIL: the GPU is visible to nvidia-smi and torch but not to fulgur: $probe" | tee -a "$log"
      exit 1
    fi
  fi
fi
{
  echo "== $gpus"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  echo "== $torch_gpu"
  echo "== $probe"
} >> "$log"

work="$(mktemp -d)"
trap 'rm -rf "$results" "$work"' EXIT
mkdir -p "$work/logs" "$work/results"
# transformer_lm's text: its default (Debian's Python 3.11 pydoc topics) is
# absent where Python is another version; the docs are 450 kB of English.
lm_text="$work/corpus.txt"
cat docs/*.md README.md > "$lm_text"
checks_deadline=$((deadline - ${GPU_CHECK_BENCH:-210}))
only=" ${GPU_CHECK_ONLY:-} "
if [[ ! -f data/digits-cinic/.complete ]]; then
  echo "== data/digits-cinic missing: exporting it" >> "$log"
  "$PYTHON" scripts/export_digits.py data/digits-cinic >> "$log" 2>&1
fi

# check SEQ NAME LIMIT FUNCTION: runs FUNCTION (which calls its commands
# through `cli`, sets `figure`, returns 0 for PASS, else FAIL) with at most
# LIMIT seconds, never past the checks' deadline (SKIP when too little is left).
check() {
  local seq="$1" t0
  name="$2"
  case_log="$work/logs/$seq-$name.log"
  figure=""
  if [[ "$only" != "  " && "$only" != *" $name "* ]]; then
    return 0
  fi
  t0=$(now)
  case_end=$((t0 + $3))
  ((case_end > checks_deadline)) && case_end=$checks_deadline
  local verdict=PASS
  if ((case_end - t0 < 15)); then
    verdict=SKIP
    figure="no time left"
  else
    "$4" || verdict=FAIL
  fi
  printf '%s\t%s\t%s\t%s\n' "$name" "$verdict" "$(cell "$figure")" $(($(now) - t0)) > "$work/results/$seq"
  printf 'gpu_check: %-22s %-4s %s (%s s)\n' "$name" "$verdict" "$(cell "$figure")" $(($(now) - t0))
}
# cli PROGRAM ARGS...: runs a command with the case's time left; its output
# goes to $cur and the case's log. A failure sets figure to its last line.
cli() {
  local left=$((case_end - $(now))) rc
  cur="$case_log.cur"
  echo "\$ $*" >> "$case_log"
  if ((left <= 0)); then
    figure="no time left for $(basename "$1")"
    return 124
  fi
  timeout -k 10 "$left" "$@" > "$cur" 2>&1
  rc=$?
  cat "$cur" >> "$case_log"
  echo "(exit $rc)" >> "$case_log"
  if ((rc == 124 || rc == 137)); then
    figure="$(basename "$1") timed out ($left s left)"
  elif ((rc != 0)); then
    figure="$(basename "$1") exit $rc: $(grep -v '^\s*$' "$cur" | tail -1)"
  fi
  return $rc
}
needs() {  # needs FILE...: FAIL unless every file exists
  local f
  for f in "$@"; do
    [[ -e "$f" ]] || { figure="missing $f (build phase)"; return 1; }
  done
}
digits_needed() {
  needs "$bin/cinic10" || return 1
  [[ -f data/digits-cinic/.complete ]] || { figure="no data/digits-cinic (scripts/setup.sh exports it; copy it here)"; return 1; }
}
run_dir() { sed -n 's/^fulgur: run folder //p' "$cur" | tail -n 1; }
# test_acc MIN: the last run's test_acc, at least MIN.
test_acc() {
  local acc
  acc="$("$PYTHON" scripts/gpu_check.py metric "$(run_dir)" test_acc 2>&1)" || { figure="$acc"; return 1; }
  figure="test_acc $(awk -v a="$acc" 'BEGIN { printf "%.4f", a }') (>= $1)"
  awk -v a="$acc" -v m="$1" 'BEGIN { exit !(a >= m) }'
}
digits=(--config examples/cinic10/digits.yaml --trainer.accelerator "$acc" --trainer.enable_progress_bar false)
fit_digits() { cli "$bin/cinic10" fit "${digits[@]}" --trainer.default_root_dir "$work/runs/$name" "$@"; }

c_fp32() { digits_needed && fit_digits --data.pin_memory true && test_acc 0.97; }
c_fp16() { digits_needed && fit_digits --trainer.precision 16-mixed && test_acc 0.97; }
c_bf16() { digits_needed && fit_digits --trainer.precision bf16-mixed && test_acc 0.95; }
# The CUDA-graph step (SGD, one device, 32-true or bf16-mixed, no clipping or
# accumulation, no step-interval LR scheduler): digits.yaml as it is, whose
# epoch StepLR means a new capture at epoch 10; the log says it captured it.
c_cuda_graph() {
  digits_needed && fit_digits --data.pin_memory true --trainer.cuda_graph true || return 1
  local line
  line="$(grep -m1 'cuda_graph: captured' "$cur")" || {
    figure="no 'cuda_graph: captured' line; $(grep -m1 'fulgur: cuda_graph:' "$cur" || echo 'no cuda_graph line')"
    return 1
  }
  test_acc 0.97 || return 1
  figure="$figure; $(grep -c 'cuda_graph: captured' "$cur") captures; $line"
}
# With gradient clipping the step runs eager, and one line says why.
c_cuda_graph_eager() {
  digits_needed && fit_digits --trainer.cuda_graph true --trainer.gradient_clip_val 1.0 --trainer.max_steps 20 \
    --test_after_fit false || return 1
  local line
  line="$(grep -m1 'fulgur: cuda_graph:' "$cur")" || { figure="no 'fulgur: cuda_graph:' line"; return 1; }
  figure="$line"
  [[ "$line" == *clipping*"runs eager"* ]] && ! grep -q 'cuda_graph: captured' "$cur"
}
# lr 0.01: at the small CNN's 0.05 three epochs of resnet18 end anywhere from
# 0.23 to 0.90 with the seed; at 0.01 from 0.82 to 0.92 (CPU, seeds 42, 1, 2).
c_resnet18() {
  digits_needed && fit_digits --model.arch resnet18 --model.channels_last true --data.pin_memory true \
    --model.lr 0.01 --trainer.max_epochs 3 && test_acc 0.6
}
# The distributed strategies on one GPU: a real NCCL process group of one
# rank (DDP's bucketed allreduce; Horovod's fusion buffer; FSDP's reduce-scatter).
c_ddp() { digits_needed && fit_digits --trainer.strategy ddp --trainer.max_epochs 5 && test_acc 0.95; }
c_horovod() {
  digits_needed && fit_digits --trainer.strategy horovod --trainer.max_epochs 5 \
    --trainer.timeline "$work/timeline.json" && test_acc 0.95 || return 1
  local acc="$figure" events
  events="$("$PYTHON" scripts/gpu_check.py timeline "$work/timeline.json" 2>&1)" || { figure="$acc; $events"; return 1; }
  figure="$acc; $events"
}
c_fsdp() { digits_needed && fit_digits --trainer.strategy fsdp --trainer.max_epochs 5 && test_acc 0.95; }
# ddp_probe counts each step's host reads (ResultCollection::host_reads) on one
# NCCL rank: 256 samples, batch 8, 2 epochs, logging every 5 batches.
c_quiet_step() {
  needs "$bin/ddp_probe" || return 1
  mkdir -p "$work/quiet"
  cli "$bin/ddp_probe" fit --seed_everything 7 --trainer.accelerator "$acc" --trainer.devices 1 --trainer.strategy ddp \
    --trainer.max_epochs 2 --trainer.num_sanity_val_steps 0 --data.samples 256 --data.batch_size 8 \
    --model.batch_norm true --trainer.log_every_n_steps 5 --trainer.enable_progress_bar false \
    --trainer.default_root_dir "$work/quiet" --model.count_file "$work/quiet/counts" || return 1
  figure="$("$PYTHON" scripts/gpu_check.py quiet-step "$work/quiet/counts.0" 5 2>&1)"
}
# Exact resume on the GPU: 50 steps + resume to 100 equals 100 straight; then
# validate from that checkpoint.
det=(--config examples/cinic10/digits.yaml --trainer.accelerator "$acc" --trainer.deterministic true
     --trainer.max_epochs -1 --test_after_fit false --trainer.enable_progress_bar false)
c_resume() {
  digits_needed || return 1
  cli "$bin/cinic10" fit "${det[@]}" --trainer.default_root_dir "$work/whole" --trainer.max_steps 100 &&
    cli "$bin/cinic10" fit "${det[@]}" --trainer.default_root_dir "$work/split" --trainer.max_steps 50 &&
    cli "$bin/cinic10" fit "${det[@]}" --trainer.default_root_dir "$work/split" --trainer.max_steps 100 \
      --ckpt_path last || return 1
  figure="$("$PYTHON" scripts/gpu_check.py resume "$work/whole" "$work/split" 2>&1)"
}
c_validate() {
  digits_needed || return 1
  [[ -d "$work/split" ]] || { figure="no checkpoint: resume did not run"; return 1; }
  cli "$bin/cinic10" validate --config examples/cinic10/digits.yaml --trainer.accelerator "$acc" \
    --trainer.enable_progress_bar false --trainer.default_root_dir "$work/split" --ckpt_path last || return 1
  figure="$(grep -m1 -E '^validate:' "$cur" | cut -c1-150)"
  [[ -n "$figure" ]] || { figure="no 'validate:' line"; return 1; }
}
# scale_batch_size with real out-of-memory trials: ResNet-50 in float32 at
# 1024x1024 keeps about 2.8 GB of activations per image for the backward
# pass, so from 8 (power mode: doubling) the trial at 32 runs out of memory
# on an 80 GB GPU and the one at 64 on a 141 GB one, well below the 128
# training images. The size after the last that ran is the one that failed.
# The same program then fits at the size found, from the
# scale_batch_size.yaml the subcommand wrote.
c_scale_batch_size() {
  needs "$bin/cinic10" || return 1
  local data="$work/big" found tried side=1024 bound=()
  # Rehearsal: small images, and a bound that fails trials above 16 as an out-of-memory would.
  [[ "$acc" != gpu ]] && side=96 bound=(--scale_batch_size.max_val 16)
  for split in train:128 valid:16 test:16; do
    cli "$PYTHON" bench/gpu_throughput/peers.py make-jpegs "$data/${split%:*}" --count "${split#*:}" \
      --width "$side" --height "$side" || return 1
  done
  local big=(--config examples/cinic10/digits.yaml --trainer.accelerator "$acc" --trainer.enable_progress_bar false
             --data.root "$data" --data.num_workers 8 --model.arch resnet50 --model.channels_last true
             --trainer.default_root_dir "$work/scale")
  cli "$bin/cinic10" scale_batch_size "${big[@]}" --scale_batch_size.init_val 8 \
    --scale_batch_size.steps_per_trial 2 "${bound[@]}" || return 1
  found="$(sed -n 's/^scale_batch_size: batch size \([0-9]*\) .*/\1/p' "$cur" | tail -1)"
  tried="$(sed -n 's/.*scale_batch_size: batch size [0-9]* succeeded, trying \([0-9]*\)$/\1/p' "$cur" | tail -1)"
  [[ -n "$found" ]] || { figure="no 'scale_batch_size: batch size N' line"; return 1; }
  if [[ -z "$tried" ]] || ((found >= tried)); then
    figure="batch size $found, no trial ran out of memory"
    return 1
  fi
  local search="batch size $found (the trial at $tried ran out of memory)"
  cli "$bin/cinic10" fit "${big[@]}" --config "$work/scale/scale_batch_size.yaml" --trainer.max_steps 3 \
    --trainer.limit_val_batches 1 --test_after_fit false || { figure="$search; then fit: $figure"; return 1; }
  figure="$search; fit at $found: $(grep -m1 -E '^fit:' "$cur" | cut -c1-100)"
}

# ---- issue 53: checkpointing, CUDA graphs on the examples, ranks sharing a
# GPU over Gloo, the monitors' GPU columns, online training beside a simulation.
# Sizes: each program run takes seconds on an H100; the rehearsal shrinks them.
small=false
[[ "$acc" != gpu ]] && small=true
# transformer_lm's last line: "transformer_lm rank 0: state_bytes S peak_rss_mib R step_s T peak_cuda_mib C".
lm_field() { sed -n "s/^transformer_lm rank 0: .* $1 \([0-9.e+-]*\).*/\1/p" "$cur" | tail -1; }
# Activation checkpointing (item 4): peak CUDA memory (max_memory_allocated) and
# step time of transformer_lm with and without it; targets <= 0.6x the memory at
# <= 1.4x the time. 8 blocks of width 256, context 256, batch 32: the activations
# (about 2 GB) outweigh the weights and AdamW's state (about 0.1 GB).
c_activation_checkpointing() {
  needs "$bin/transformer_lm" || return 1
  local lm=(--text "$lm_text" --accelerator "$acc" --layers 8 --dim 256 --heads 4 --context 256 --batch_size 32 --max_steps 30
            --limit_train_batches 100 --limit_val_batches 0 --enable_checkpointing false --enable_model_summary false)
  $small && lm=(--text "$lm_text" --accelerator "$acc" --layers 2 --dim 64 --heads 4 --context 64 --batch_size 8 --max_steps 8
                --limit_train_batches 100 --limit_val_batches 0 --enable_checkpointing false --enable_model_summary false)
  local key=peak_cuda_mib unit="CUDA MiB" mem step ac_mem ac_step
  # The rehearsal has no CUDA memory: the same plumbing on the peak RSS.
  $small && key=peak_rss_mib unit="RSS MiB (rehearsal)"
  cli "$bin/transformer_lm" "${lm[@]}" --activation_checkpointing false --default_root_dir "$work/ac/off" || return 1
  mem="$(lm_field "$key")" step="$(lm_field step_s)"
  cli "$bin/transformer_lm" "${lm[@]}" --activation_checkpointing true --default_root_dir "$work/ac/on" || return 1
  ac_mem="$(lm_field "$key")" ac_step="$(lm_field step_s)"
  if [[ -z "$mem" || -z "$ac_mem" || -z "$step" || -z "$ac_step" ]]; then
    figure="no 'transformer_lm rank 0: ... $key N' line"
    return 1
  fi
  figure="$(awk -v m="$mem" -v am="$ac_mem" -v s="$step" -v as="$ac_step" -v u="$unit" 'BEGIN {
    printf "peak %s %d -> %d (%.2fx, target <= 0.6), step %.4f -> %.4f s (%.2fx, target <= 1.4)",
      u, m, am, (m > 0 ? am / m : 0), s, as, (s > 0 ? as / s : 0) }')"
  awk -v m="$mem" -v am="$ac_mem" -v s="$step" -v as="$ac_step" \
    'BEGIN { exit !(m > 0 && s > 0 && am / m <= 0.6 && as / s <= 1.4) }'
}
# CUDA graphs on the examples users run (item 5): sequence_classifier and
# transformer_lm at fixed shapes, cuda_graph off and on: samples/s and the
# last logged train_loss, equal within a relative 1e-3 (a replayed step runs
# the same kernels; 1e-3 leaves room for cuBLAS picking other algorithms).
# Both run with --optimizer sgd: their default Adam(W) keeps its step count on
# the host, which the graph step refuses (it would then run eager and say why).
# sequence_classifier pads each batch to its longest sequence: batches of
# another shape than the captured one run eager (the log says so once).
graph_pair() {  # graph_pair NAME SAMPLES_PER_STEP PROGRAM ARGS...: sets pair_figure, returns 1 on a loss mismatch
  local tag="$1" batch="$2" on rate_off rate_on loss_off loss_on mode
  shift 2
  local prog="$1"
  shift
  local run
  for mode in false true; do
    cli "$prog" "$@" --cuda_graph "$mode" --profiler simple --default_root_dir "$work/graph/$tag-$mode" || return 1
    run="$(run_dir)"
    [[ -n "$run" ]] || { figure="$tag: no 'fulgur: run folder' line"; return 1; }
    local mean loss
    mean="$("$PYTHON" scripts/gpu_check.py profile-mean "$run/profile.txt" run_training_batch 2>&1)" ||
      { figure="$tag: $mean"; return 1; }
    loss="$("$PYTHON" scripts/gpu_check.py metric "$run" train_loss 2>&1)" || { figure="$tag: $loss"; return 1; }
    if [[ "$mode" == true ]]; then
      rate_on="$(awk -v b="$batch" -v t="$mean" 'BEGIN { printf "%.0f", b / t }')" loss_on="$loss"
      on="$(grep -m1 -o 'cuda_graph: captured.*' "$cur" || grep -m1 -o 'cuda_graph: .*runs eager' "$cur" || echo 'no cuda_graph line')"
    else
      rate_off="$(awk -v b="$batch" -v t="$mean" 'BEGIN { printf "%.0f", b / t }')" loss_off="$loss"
    fi
  done
  pair_figure="$tag: $rate_off -> $rate_on samples/s, loss $(awk -v a="$loss_off" -v b="$loss_on" \
    'BEGIN { printf "%.6g / %.6g", a, b }') (${on:0:45})"
  awk -v a="$loss_off" -v b="$loss_on" 'BEGIN { d = a - b; if (d < 0) d = -d; s = a < 0 ? -a : a; exit !(d <= 1e-3 * s + 1e-7) }'
}
c_cuda_graph_examples() {
  needs "$bin/sequence_classifier" "$bin/transformer_lm" || return 1
  local steps=300 lm_steps=200 seq_figure rc=0
  $small && steps=20 lm_steps=10
  pair_figure=""
  graph_pair sequence 32 "$bin/sequence_classifier" --accelerator "$acc" --optimizer sgd --batch_size 32 --max_steps "$steps" \
    --max_epochs -1 --limit_val_batches 0 --log_every_n_steps 10 --enable_checkpointing false || rc=1
  seq_figure="${pair_figure:-$figure}"
  ((rc == 0)) || { figure="$seq_figure"; return 1; }
  pair_figure=""
  graph_pair transformer_lm 16 "$bin/transformer_lm" --text "$lm_text" --accelerator "$acc" --optimizer sgd --lr 0.1 --layers 4 --dim 128 --context 128 \
    --batch_size 16 --max_steps "$lm_steps" --limit_train_batches 1000 --limit_val_batches 0 --log_every_n_steps 10 \
    --enable_checkpointing false --enable_model_summary false || rc=1
  figure="$seq_figure; ${pair_figure:-$figure}"
  return $rc
}
# Two ranks sharing the one GPU over Gloo (item 6; NCCL refuses two ranks on
# one device): process_group_backend gloo, CUDA tensors; the weights after 2
# epochs equal one rank's on the same global batch (16), as the CPU tests
# demand (tests/strategies/ddp_test.cpp, fsdp_test.cpp), within 1e-4 (the
# GPU's kernels for a batch of 8 and of 16 may sum in other orders).
# The same over MPI (issue 60): two ranks started by mpirun (the kit's Open
# MPI, scripts/gpu_kit.sh), process_group_backend mpi, CUDA tensors staged
# through pinned host memory or handed to a CUDA-aware MPI directly.
backend_pair() {  # backend_pair BACKEND PROBE STRATEGY ARGS...
  local backend="$1" probe="$2" strategy="$3" dir="$work/$1/$name"
  shift 3
  needs "$bin/$probe" || return 1
  mkdir -p "$dir"
  local common=(fit --seed_everything 7 --trainer.accelerator "$acc" --trainer.enable_progress_bar false
                --trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 60 --trainer.max_epochs 2
                --trainer.logger false --trainer.enable_checkpointing false --trainer.enable_model_summary false "$@")
  local launch=() aware=""
  if [[ "$backend" == mpi ]]; then
    command -v mpirun > /dev/null || { figure="no mpirun on the PATH (scripts/gpu_kit.sh carries Open MPI)"; return 1; }
    launch=(mpirun --allow-run-as-root --oversubscribe -np 2)
    aware="$(ompi_info --parsable --all 2> /dev/null | sed -n 's/^mca:opal:base:param:opal_built_with_cuda_support:value://p')"
    aware="; CUDA-aware MPI: ${aware:-unknown} ($([[ "$aware" == true ]] && echo direct || echo staged through pinned memory))"
  fi
  cli "$bin/$probe" "${common[@]}" --data.batch_size 16 --trainer.default_root_dir "$dir/one" \
    --model.output "$dir/one.pt" || return 1
  cli "${launch[@]}" "$bin/$probe" "${common[@]}" --trainer.devices 2 --trainer.strategy "$strategy" --data.batch_size 8 \
    --trainer.process_group_backend "$backend" --trainer.default_root_dir "$dir/two" --model.output "$dir/two.pt" || return 1
  local same rc
  same="$("$PYTHON" scripts/gpu_check.py same-weights "$dir/one.pt" "$dir/two.pt" 1e-4 2>&1)"
  rc=$?
  figure="2 ${backend^} ranks on one device vs 1 rank: $same$aware"
  return $rc
}
c_gloo_ddp() { backend_pair gloo ddp_probe ddp; }
c_gloo_horovod() { backend_pair gloo ddp_probe horovod; }
c_gloo_fsdp() {
  backend_pair gloo fsdp_probe fsdp --data.samples 96 --trainer.fsdp.min_num_params 50 --trainer.fsdp.sharding_strategy FULL_SHARD
}
c_mpi_ddp() { backend_pair mpi ddp_probe ddp; }
c_mpi_fsdp() {
  backend_pair mpi fsdp_probe fsdp --data.samples 96 --trainer.fsdp.min_num_params 50 --trainer.fsdp.sharding_strategy FULL_SHARD
}
# The monitors' GPU columns (item 7): a short digits fit with ThroughputMonitor
# and DeviceStatsMonitor; metrics.csv must hold the rolling samples/s and the
# CUDA memory and NVML columns, the last logged value > 0 (NVML's utilisation
# may read 0 between kernels, so it must only be there).
c_monitors() {
  digits_needed || return 1
  fit_digits --trainer.max_steps 60 --trainer.log_every_n_steps 10 --test_after_fit false \
    --trainer.callbacks '[{class_path: ThroughputMonitor, init_args: {window_size: 10}}, {class_path: DeviceStatsMonitor}]' ||
    return 1
  local run keys=(train/device/samples_per_sec)
  run="$(run_dir)"
  if [[ "$acc" == gpu ]]; then
    keys+=(on_train_batch_end/allocated_bytes.all.current on_train_batch_end/reserved_bytes.all.peak
           "on_train_batch_end/memory.used (MB)")
  else
    keys+=(on_train_batch_end/cpu_vm_percent)
  fi
  figure="$("$PYTHON" scripts/gpu_check.py positive "$run" "${keys[@]}" 2>&1)" || return 1
  [[ "$acc" != gpu ]] && return 0
  local util
  util="$("$PYTHON" scripts/gpu_check.py metric "$run" "DeviceStatsMonitor.on_train_batch_end/utilization.gpu (%)" 2>&1)" ||
    { figure="$figure; $util"; return 1; }
  figure="$figure; utilization.gpu=$util"
  awk -v u="$util" 'BEGIN { exit !(u >= 0 && u <= 100) }'
}
# Online training beside the heat simulation (item 8): heat_insitu trains its
# surrogate on the device while the simulation (on the CPU) keeps stepping;
# its last line gives the simulation's step time alone and while training.
# The verdict is that it ran and the surrogate learnt (error < 0.10, as
# example_insitu_test); the ratio is the figure to record.
c_insitu() {
  needs "$bin/heat_insitu" || return 1
  local prog=("$bin/heat_insitu")
  if command -v mpirun > /dev/null; then
    prog=(mpirun --allow-run-as-root --oversubscribe -np 1 -x FULGUR_FILE_STORE="$work/insitu-store" "$bin/heat_insitu")
  fi
  local steps=300
  $small && steps=100
  cli "${prog[@]}" --accelerator "$acc" --train_steps "$steps" --rollout 10 --alone_steps 1000 || return 1
  local times error
  times="$(grep -m1 -o 'simulation step .*' "$cur")"
  error="$(sed -n 's/.*error after 10 steps on its own: \([0-9.]*\).*/\1/p' "$cur")"
  [[ -n "$times" && -n "$error" ]] || { figure="no 'simulation step ... ms' or error line"; return 1; }
  figure="$times; $(grep -m1 -o '[0-9]* simulation steps while training [0-9]* steps ([0-9.]* s)' "$cur"); error $error"
  $small || awk -v e="$error" 'BEGIN { exit !(e < 0.10) }'
}

# A program that seeds with torch::manual_seed before its Trainer hides the
# GPUs from LibTorch for good (it decides once whether CUDA is there); the
# Trainer must say so, not "no CUDA device is available".
c_late_cuda() {
  needs "$bin/host_probe" || return 1
  cli "$bin/host_probe" late-cuda "$work/late-cuda" || return 1
  figure="$(grep -m1 -o 'late-cuda: .*' "$cur" | cut -c1-160)"
  if [[ "$acc" == gpu ]]; then
    grep -q 'before fulgur loaded its CUDA module' "$cur"
  else
    grep -q 'no CUDA device is available' "$cur"
  fi
}

# ---- issue 59: the JPEG path as users run it, first and alone, on its own
# time. 20 batches of 256 per epoch (real ImageNet has about 5,000) so the
# epoch boundaries the timed steps cross are few and prefetched (persistent
# workers); the rehearsal shrinks the sizes.
jpeg_batch=256 jpeg_classes=10 jpeg_steps=60 jpeg_warmup=10
$small && jpeg_batch=16 jpeg_steps=6 jpeg_warmup=2
jpegs="$work/jpegs"
# jpeg_data: 20 batches' worth of training JPEGs, 2 of validation, once.
jpeg_data() {
  [[ -f "$jpegs/.complete" ]] && return 0
  cli "$PYTHON" bench/gpu_throughput/peers.py make-jpegs "$jpegs/train" --count $((20 * jpeg_batch)) \
    --classes "$jpeg_classes" || return 1
  cli "$PYTHON" bench/gpu_throughput/peers.py make-jpegs "$jpegs/val" --count $((2 * jpeg_batch)) \
    --classes "$jpeg_classes" || return 1
  touch "$jpegs/.complete"
}
# engines LOG: the last epoch's decode line of a log, shortened.
engines() { grep -o 'decode on [^,]*, epoch [0-9]*: .*' "$1" | tail -1 | sed 's/ images in [0-9]* batches//'; }
rate_of() { sed -n 's/.*: \([0-9.]*\) img\/s.*/\1/p' "$cur" | tail -1; }
c_jpeg_throughput() {
  needs "$bin/gpu_throughput" && jpeg_data || return 1
  local common=(--precision bf16-mixed --steps "$jpeg_steps" --warmup "$jpeg_warmup" --batch_size "$jpeg_batch")
  local mem jpeg tv line
  cli "$bin/gpu_throughput" --case trainer "${common[@]}" || return 1
  mem="$(rate_of)"
  # The rehearsal: gpu_throughput measures on a GPU only (it says so and exits 0).
  $small && grep -q skipped "$cur" && { figure="rehearsal: $(tail -1 "$cur")"; return 0; }
  cli "$bin/gpu_throughput" --case jpeg --decode gpu --data "$jpegs/train" --workers "$(nproc)" "${common[@]}" || return 1
  jpeg="$(rate_of)" line="$(engines "$cur")"
  cli "$PYTHON" bench/gpu_throughput/peers.py gpu-decode --data "$jpegs/train" --workers "$(nproc)" \
    --precision bf16-mixed --steps "$jpeg_steps" --warmup "$jpeg_warmup" --batch-size "$jpeg_batch" || return 1
  tv="$(rate_of)"
  if [[ -z "$mem" || -z "$jpeg" || -z "$tv" ]]; then
    figure="no img/s figure: in-memory '${mem}', jpeg '${jpeg}', torchvision '${tv}'"
    return 1
  fi
  figure="$(awk -v j="$jpeg" -v m="$mem" -v t="$tv" 'BEGIN {
    printf "jpeg gpu %.0f img/s = %.2fx in-memory %.0f (>= 0.9), %.2fx torchvision gpu decode %.0f (>= 1.3)",
      j, j / m, m, j / t, t }'); ${line:-no decode line}"
  awk -v j="$jpeg" -v m="$mem" -v t="$tv" 'BEGIN { exit !(j >= 0.9 * m && j >= 1.3 * t) }'
}
# The shipped config (pin_memory true, persistent workers, 8 workers,
# ResNet-50) through its own command line, decode gpu; 2 epochs.
c_jpeg_imagenet() {
  needs "$bin/imagenet" && jpeg_data || return 1
  local decode=gpu size=() run mean
  # The rehearsal's device is the CPU, which decode gpu refuses: auto says why.
  $small && decode=auto size=(--model.arch cnn --data.crop_size 64 --data.resize_size 72)
  cli "$bin/imagenet" fit --config examples/imagenet/config.yaml --data.root "$jpegs" --data.decode "$decode" \
    --data.batch_size "$jpeg_batch" --model.num_classes "$jpeg_classes" "${size[@]}" \
    --trainer.accelerator "$acc" --trainer.precision bf16-mixed --trainer.max_epochs 2 --trainer.limit_val_batches 1 \
    --trainer.num_sanity_val_steps 0 --trainer.profiler simple --trainer.enable_progress_bar false \
    --trainer.enable_checkpointing false --trainer.default_root_dir "$work/runs/imagenet" || return 1
  run="$(run_dir)"
  local line
  line="$(engines "$cur")"
  mean="$("$PYTHON" scripts/gpu_check.py profile-mean "$run/profile.txt" run_training_batch 2>&1)" ||
    { figure="$mean"; return 1; }
  figure="$(awk -v b="$jpeg_batch" -v t="$mean" 'BEGIN { printf "%.0f img/s", b / t }'); $(grep -c 'fulgur: decode on' "$cur") decode lines${line:+; $line}"
  $small && figure="$figure; $(grep -m1 -o 'decode auto: .*' "$cur" | cut -c1-80)"
  ! grep -q 'cannot pin' "$cur" || { figure="pinning error: $(grep -m1 'cannot pin' "$cur")"; return 1; }
  $small || grep -q 'fulgur: decode on cuda' "$cur" || { figure="$figure; no 'decode on cuda' line"; return 1; }
}
c_jpeg_parity() {
  needs "$bin/gpu_throughput" && jpeg_data || return 1
  local device=()
  $small && device=(--device cpu)
  cli "$bin/gpu_throughput" --case parity --data "$jpegs/train" --images "$jpeg_batch" "${device[@]}"
  local rc=$?
  figure="$(grep -m1 -o 'gpu_throughput\[parity.*' "$cur" | sed 's/^gpu_throughput//')${figure:+; $figure}"
  return $rc
}
# Four lanes at once: one device; NCCL; resume and validate; issue 53's checks.
lane_single() {
  check 01 fp32 150 c_fp32
  check 02 cuda_graph 150 c_cuda_graph
  check 03 cuda_graph_eager 60 c_cuda_graph_eager
  check 04 fp16 150 c_fp16
  check 05 bf16 150 c_bf16
  check 06 resnet18 150 c_resnet18
}
lane_nccl() {
  check 07 quiet_step 90 c_quiet_step
  check 08 ddp 120 c_ddp
  check 09 fsdp 120 c_fsdp
  check 10 horovod 120 c_horovod
}
lane_resume() {
  check 11 resume 180 c_resume
  check 12 validate 60 c_validate
}
# Issue 53's checks, each well under a minute on an H100. They share the GPU
# with the other lanes: for clean timings run them alone (GPU_CHECK_ONLY).
lane_issue53() {
  check 15 activation_checkpointing 60 c_activation_checkpointing
  check 16 cuda_graph_examples 90 c_cuda_graph_examples
  check 17 gloo_ddp 60 c_gloo_ddp
  check 18 gloo_horovod 60 c_gloo_horovod
  check 19 gloo_fsdp 60 c_gloo_fsdp
  check 20 monitors 60 c_monitors
  check 21 insitu 60 c_insitu
  check 22 mpi_ddp 60 c_mpi_ddp
  check 23 mpi_fsdp 60 c_mpi_fsdp
  check 24 late_cuda 30 c_late_cuda
}
# report.md from what has finished so far (written again after each stage,
# so a phase cut short still leaves one); the finished checks' logs go to run.log.
write_report() {
  local f n v fig s passed=0 failed=0 skips=0
  : > "$results/rows"
  for f in "$work/results"/*; do
    [[ -f "$f" ]] || continue
    IFS=$'\t' read -r n v fig s < "$f"
    printf '| %s | %s | %s | %s |\n' "$n" "$v" "$fig" "$s" >> "$results/rows"
    case "$v" in PASS) ((passed++)) ;; FAIL) ((failed++)) ;; *) ((skips++)) ;; esac
  done
  {
    echo "# GPU check: run ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "$(tr '\n' ';' <<< "$gpus" | sed 's/;$//'); $torch_gpu; fulgur: $probe."
    echo
    echo "| check | verdict | key figure | seconds |"
    echo "|---|---|---|---|"
    cat "$results/rows"
    echo
    echo "$passed passed, $failed failed, $skips skipped in $(($(now) - start)) s${1:+ ($1)}."
    if [[ -f "$report/bench.md" ]]; then
      echo
      echo "## Benchmarks (bench/gpu_throughput/run.sh)"
      echo
      cat "$report/bench.md"
    fi
  } > "$report/report.md"
  for f in "$work/logs"/*.log; do
    [[ -f "$f" ]] || continue
    printf '\n===== %s\n' "$(basename "$f" .log)"
    cat "$f"
    rm -f "$f"
  done >> "$log"
  failures=$failed
  summary="$passed passed, $failed failed, $skips skipped"
}

# The JPEG checks first, alone, on their own time (issue 59).
jpeg_end=$(($(now) + ${GPU_CHECK_JPEG:-170}))
saved_deadline=$checks_deadline
checks_deadline=$jpeg_end
check 00a jpeg_throughput 120 c_jpeg_throughput
check 00b jpeg_imagenet 90 c_jpeg_imagenet
check 00c jpeg_parity 40 c_jpeg_parity
checks_deadline=$saved_deadline
write_report "running the other checks"

lane_single &
lanes=($!)
lane_nccl &
lanes+=($!)
lane_resume &
lanes+=($!)
lane_issue53 &
lanes+=($!)
trap 'kill "${lanes[@]}" 2> /dev/null; rm -rf "$results" "$work"' EXIT
wait "${lanes[@]}"
write_report "running scale_batch_size and the benchmarks"
# Alone: it fills the GPU's memory on purpose.
checks_deadline=$((checks_deadline + 60))
check 13 scale_batch_size 200 c_scale_batch_size
write_report "running the benchmarks"

if [[ "$only" == "  " || "$only" == *" bench "* ]]; then
  t0=$(now)
  budget=$((deadline - t0 - 10))
  if ((budget < 60)); then
    printf '%s\t%s\t%s\t%s\n' benchmarks SKIP "no time left" 0 > "$work/results/14"
  else
    echo "== bench/gpu_throughput/run.sh $build $report (BENCH_BUDGET=$budget)" > "$work/logs/14-bench.log"
    BENCH_BUDGET=$budget PYTHON="$PYTHON" STEPS="${STEPS:-40}" WARMUP="${WARMUP:-8}" BENCH_JPEG=0 \
      bash bench/gpu_throughput/run.sh "$build" "$report" 2>&1 | tee -a "$work/logs/14-bench.log"
    rc=${PIPESTATUS[0]}
    measured=$(grep -c -E '^\| .* \| [0-9.]+ \| [0-9]+ \|' "$report/bench.md" 2> /dev/null)
    missing=$(grep -c -E 'failed|timed out' "$report/bench.md" 2> /dev/null)
    spent=$(grep -c 'budget spent' "$report/bench.md" 2> /dev/null)
    figure="${measured:-0} cases measured, ${missing:-0} failed, ${spent:-0} out of time (tables below)"
    if grep -q skipped "$report/bench.md" 2> /dev/null && ((${measured:-0} == 0)); then
      verdict=SKIP
      figure="$(head -1 "$report/bench.md")"
    elif ((rc != 0)); then
      verdict=FAIL
    else
      verdict=PASS
    fi
    printf '%s\t%s\t%s\t%s\n' benchmarks "$verdict" "$(cell "$figure")" $(($(now) - t0)) > "$work/results/14"
  fi
fi
write_report
echo "gpu_check: run: $summary in $(($(now) - start)) s; report $report/report.md"
((failures == 0))
