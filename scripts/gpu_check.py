"""The parts of scripts/gpu_check.sh that read files: each prints one line (the
check's key figure) and exits 1 when the check fails.

  gpu_check.py metric RUN_DIR COLUMN        the column's last value in RUN_DIR/metrics.csv
  gpu_check.py resume WHOLE SPLIT           last.ckpt of 100 straight steps against 50 + 50 resumed
  gpu_check.py timeline FILE                a Horovod timeline (Chrome trace) with events in it
  gpu_check.py quiet-step COUNTS LOG_EVERY  ddp_probe's per-step counts: no host read outside logging steps
  gpu_check.py gpu                          torch's version and the first GPU, exit 1 without one

Only `resume` and `gpu` import torch.
"""
import csv
import glob
import json
import sys


def metric(run_dir, column):
    value = ""
    try:
        with open(f"{run_dir}/metrics.csv", newline="") as f:
            for row in csv.DictReader(f):
                if row.get(column):
                    value = row[column]
    except OSError as e:
        print(f"no metrics.csv: {e}")
        return 1
    if not value:
        print(f"no {column} in {run_dir}/metrics.csv")
        return 1
    print(value)
    return 0


def resume(whole, split):
    import torch

    def last(folder):
        found = sorted(glob.glob(f"{folder}/fulgur_logs/version_*/checkpoints/last.ckpt"))
        if not found:
            raise SystemExit(f"no last.ckpt under {folder}")
        return found[-1]

    a = torch.load(last(whole), weights_only=True)
    b = torch.load(last(split), weights_only=True)
    if not a["global_step"] == b["global_step"] == 100:
        print(f"global_step {a['global_step']} straight, {b['global_step']} resumed (expected 100)")
        return 1
    bad = [k for k in a["state_dict"] if not torch.equal(a["state_dict"][k], b["state_dict"][k])]
    if bad:
        print(f"{len(bad)} of {len(a['state_dict'])} tensors differ after 50 + 50 steps: {', '.join(bad[:4])}")
        return 1
    print(f"{len(a['state_dict'])} tensors bit-identical after 50 + 50 steps")
    return 0


def timeline(path):
    with open(path) as f:
        events = json.load(f)
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    print(f"{len(events)} timeline events")
    return 0 if events else 1


def quiet_step(path, log_every):
    """Lines after the first: <batches done> <global step> <last batch of epoch> <collectives> <host reads>,
    one per training step (from one batch's start to the next's), as tests/strategies/quiet_step_test.cpp reads them."""
    log_every = int(log_every)
    steps = []
    with open(path) as f:
        next(f)  # "buckets N buffers M"
        for line in f:
            fields = line.split()
            if len(fields) == 5:
                steps.append([int(x) for x in fields])
    logging = [s for s in steps if not s[2] and s[0] % log_every == 0]
    quiet = [s for s in steps if not s[2] and s[0] % log_every != 0]
    ends = [s for s in steps if s[2]]
    reads = sum(s[4] for s in steps)
    noisy = [s for s in quiet if s[4] != 0]
    print(f"{reads} host reads in {len(steps)} steps: {sum(s[4] for s in logging)} in {len(logging)} logging steps, "
          f"{sum(s[4] for s in ends)} at {len(ends)} epoch ends, {sum(s[4] for s in quiet)} in {len(quiet)} quiet steps"
          + (f" (first at batch {noisy[0][0]})" if noisy else ""))
    return 0 if quiet and logging and not noisy and sum(s[4] for s in logging) > 0 else 1


def gpu():
    import torch
    if not torch.cuda.is_available():
        print(f"torch {torch.__version__}: torch.cuda.is_available() is false")
        return 1
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.device_count()} GPU(s), "
          f"{torch.cuda.get_device_name(0)}")
    return 0


def main(argv):
    commands = {"metric": metric, "resume": resume, "timeline": timeline, "quiet-step": quiet_step, "gpu": gpu}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](*argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
