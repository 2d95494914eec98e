#!/usr/bin/env bash
# bench/pipeline.sh BUILD_DIR: the bubble of each pipeline schedule,
# measured from every rank's timeline (--trainer.timeline: each stage's
# forward and backward passes), against its textbook value with equal pass
# times: (p-1)/(m+p-1) for gpipe and 1f1b, (p-1)/(v m+p-1) interleaved
# (v = 2), (p-1)/(3m+p-1) for zero_bubble (ZB-H1). For p = 2 and 4 stages and
# m = 4, 8, 16 micro-batches of MICRO samples (default 64) through LAYERS
# (default 8) residual MLP blocks of width WIDTH (default 256), one
# intra-op thread per rank; steps after the first two. Also each rank's
# busy time per step (the sum of its passes: what zero_bubble's separate
# weight pass costs against 1f1b's one backward) and the most
# micro-batches a rank held at once. The model is the pipeline test's
# (tests/probes/pipeline_probe, built with the tests). A machine with fewer
# cores than ranks shares them, and its idle time is not the schedule's
# alone: give the core count beside the figures. Record them in
# bench/RESULTS.md.
set -euo pipefail
build="$(cd "${1:-build}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
micro="${MICRO:-64}" layers="${LAYERS:-8}" width="${WIDTH:-256}" steps="${STEPS:-6}"
echo "pipeline: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $layers blocks of width $width, $micro samples per micro-batch"
printf '%-17s %2s %3s %9s %9s %8s  %s\n' schedule p m measured expected busy_ms "micro-batches held (rank 0..p-1)"
for p in ${STAGES:-2 4}; do
  for m in 4 8 16; do
    for schedule in gpipe 1f1b interleaved_1f1b zero_bubble; do
      run="$work/$schedule-$p-$m"
      batch=$((m * micro))
      OMP_NUM_THREADS=1 "$build/bin/pipeline_probe" fit --seed_everything 7 --trainer.accelerator cpu \
        --trainer.enable_progress_bar false --trainer.enable_checkpointing false --trainer.logger false \
        --trainer.num_sanity_val_steps 0 --trainer.limit_val_batches 0 --trainer.max_steps "$steps" \
        --trainer.devices "$p" --trainer.strategy model_parallel --trainer.model_parallel.data_parallel ddp \
        --trainer.model_parallel.pipeline_parallel_size "$p" --trainer.model_parallel.pipeline_schedule "$schedule" \
        --trainer.model_parallel.microbatches "$m" --trainer.timeline "$run.json" --trainer.default_root_dir "$run" \
        --model.tensor_parallel true --model.layers "$layers" --model.width "$width" \
        --data.width "$width" --data.batch_size "$batch" --data.samples $((batch * steps)) > "$run.out" 2>&1 ||
        { cat "$run.out"; exit 1; }
      held="$(grep -o 'rank [0-9]*: peak_in_flight [0-9]*' "$run.out" | sort -n -k2 | awk '{ printf "%s ", $4 }')"
      python3 - "$run.json" "$p" "$m" "$schedule" "$held" <<'PY'
import glob, json, os, re, sys
path, p, m, schedule, held = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
stem, ext = os.path.splitext(path)
events = []
for f in [path] + sorted(glob.glob(stem + ".rank*" + ext)):
    text = open(f).read().strip().rstrip(",")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text += "]"
    events += [e for e in json.loads(text) if "stage" in e.get("args", {}).get("tensors", "")]
bubbles, busies = [], []
for step in sorted({int(re.search(r"step (\d+)", e["args"]["tensors"]).group(1)) for e in events}):
    if step <= 2:
        continue
    mine = [e for e in events if e["args"]["tensors"].endswith(f"step {step}")]
    start = min(e["ts"] for e in mine)
    span = max(e["ts"] + e["dur"] for e in mine) - start
    for rank in range(p):
        busy = sum(e["dur"] for e in mine if e["pid"] == rank)
        bubbles.append(1 - busy / span)
        busies.append(busy / 1e3)
v = 2 if schedule == "interleaved_1f1b" else 1
expected = {"zero_bubble": (p - 1) / (3 * m + p - 1)}.get(schedule, (p - 1) / (v * m + p - 1))
print(f"{schedule:<17} {p:2d} {m:3d} {sum(bubbles) / len(bubbles):9.3f} {expected:9.3f} {sum(busies) / len(busies):8.1f}  {held}")
PY
    done
  done
done
