"""The parts of scripts/gpu_check.sh that read files: each prints one line (the
check's key figure) and exits 1 when the check fails.

  gpu_check.py metric RUN_DIR COLUMN        the column's last value in RUN_DIR/metrics.csv
  gpu_check.py resume WHOLE SPLIT           last.ckpt of 100 straight steps against 50 + 50 resumed
  gpu_check.py timeline FILE                a Horovod timeline (Chrome trace) with events in it
  gpu_check.py quiet-step COUNTS LOG_EVERY  ddp_probe's per-step counts: no host read outside logging steps
  gpu_check.py gpu                          torch's version and the first GPU, exit 1 without one
  gpu_check.py same-weights A B TOL         two pickled weight tensors (ddp_probe's --model.output) within TOL
  gpu_check.py profile-mean PROFILE ACTION  an action's mean seconds in a simple profiler's profile.txt
  gpu_check.py positive RUN_DIR KEY...      metrics.csv has, for each KEY, a column ending in KEY whose last value is > 0

Only `resume`, `same-weights` and `gpu` import torch.
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


def same_weights(a, b, tol):
    import torch

    def load(path):
        value = torch.load(path, weights_only=True)
        # torch::pickle_save of one tensor, or a container of them.
        if isinstance(value, torch.Tensor):
            return value.detach().cpu().double().flatten()
        if isinstance(value, dict):
            value = list(value.values())
        return torch.cat([t.detach().cpu().double().flatten() for t in value])

    try:
        x, y = load(a), load(b)
    except Exception as e:  # a missing or unreadable file: the check's figure
        print(f"cannot read the weights: {e}")
        return 1
    if x.shape != y.shape:
        print(f"{x.numel()} against {y.numel()} weights")
        return 1
    diff = (x - y).abs().max().item()
    moved = (x.abs().max().item() > 0)
    print(f"{x.numel()} weights, largest difference {diff:.3g} (tolerance {float(tol):g})")
    return 0 if moved and diff <= float(tol) else 1


def profile_mean(path, action):
    try:
        with open(path) as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) >= 2 and cells[0] == action:
                    print(cells[1])
                    return 0
    except OSError as e:
        print(f"no profile: {e}")
        return 1
    print(f"no {action} in {path}")
    return 1


def positive(run_dir, *keys):
    last = {}
    try:
        with open(f"{run_dir}/metrics.csv", newline="") as f:
            for row in csv.DictReader(f):
                for column, value in row.items():
                    if value:
                        last[column] = value
    except OSError as e:
        print(f"no metrics.csv: {e}")
        return 1
    found, bad = [], []
    for key in keys:
        columns = sorted(c for c in last if c.endswith(key))
        if not columns:
            bad.append(f"no column *{key}")
            continue
        value = float(last[columns[0]])
        found.append(f"{columns[0]}={value:.4g}")
        if not value > 0:
            bad.append(f"{columns[0]}={value:g}")
    print("; ".join(bad + found) if bad else "; ".join(found))
    return 1 if bad else 0


def gpu():
    import torch
    if not torch.cuda.is_available():
        print(f"torch {torch.__version__}: torch.cuda.is_available() is false")
        return 1
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}), {torch.cuda.device_count()} GPU(s), "
          f"{torch.cuda.get_device_name(0)}")
    return 0


def main(argv):
    commands = {"metric": metric, "resume": resume, "timeline": timeline, "quiet-step": quiet_step, "gpu": gpu,
                "same-weights": same_weights, "profile-mean": profile_mean, "positive": positive}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    return commands[argv[0]](*argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
