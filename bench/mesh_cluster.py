#!/usr/bin/env python3
"""Model-parallel layouts on a simulated cluster, against the mesh scaling
model (tools/mesh_model.py). Needs root (network namespaces).

    python3 bench/mesh_cluster.py [BUILD_DIR] [--rates 10gbit 1gbit 250mbit] [--only full tp2-ddp ...]

The cluster is scripts/sim_cluster.sh: 2 nodes x 2 ranks, each node's link
limited to RATE each way. The model is the transformer_lm example (2 blocks
of width 256, 1.73 M parameters, 64 tokens, 8 sequences per dp rank, one
thread per rank). Per layout and rate it measures the bytes node 1 sent
per step (the difference of a 2-step and a 12-step run, so set-up is left
out) and the step time (the 12-step run's steps 4-12, over the ranks). The
first rate is the calibration: its step, less what the model says its link
costs, is the layout's compute; the model then predicts the bytes and the
step at every other rate from that compute, the parameter counts and the
link alone. Prints one line per layout and rate with the errors, then the
largest: of the bytes over all layouts, of the steps over the layouts of
one rank per node (2 ranks on 2 cores: with 2 ranks per node, 4 share the
cores, so a rank waiting on the link frees a core for another and the
step is the cores' as much as the link's).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import mesh_model  # noqa: E402

SIM = ROOT / "scripts" / "sim_cluster.sh"
LAYERS, DIM, CONTEXT, BATCH, VOCAB = 2, 256, 64, 8, 256
# Per block: q, k, v, proj (dim x dim + dim), fc1, fc2 (4 dim x dim + ...), two norms; the embeddings, the final norm, the head.
PARAMS = LAYERS * (12 * DIM * DIM + 13 * DIM) + VOCAB * DIM + CONTEXT * DIM + 2 * DIM + DIM * VOCAB + VOCAB
REPLICATED = LAYERS * 6 * DIM + 2 * DIM  # norms and the row-split layers' biases stay whole on every tp rank
LONG = 12  # steps of the timed run; its steps 4-12 are timed
MP = ["--strategy", "model_parallel", "--model_parallel.data_parallel"]
LAYOUTS = {  # name: (ranks per node, flags, mesh sizes, data parallel)
    # 2 nodes x 1 rank: one core per rank, so the step is what the link makes it
    "dp2-fsdp": (1, ["--strategy", "fsdp", "--fsdp.sharding_strategy", "FULL_SHARD"], dict(dp=2), "fsdp"),
    "dp2-ddp": (1, ["--strategy", "ddp"], dict(dp=2), "ddp"),
    "tp2": (1, MP + ["ddp", "--model_parallel.tensor_parallel_size", "2"], dict(tp=2), "ddp"),
    "cp2": (1, MP + ["ddp", "--model_parallel.context_parallel_size", "2"], dict(cp=2), "ddp"),
    "pp2": (1, MP + ["ddp", "--model_parallel.pipeline_parallel_size", "2"], dict(pp=2), "ddp"),
    # 2 nodes x 2 ranks: which groups cross the link (4 ranks share the 2 cores, so steps are rough)
    "full": (2, ["--strategy", "fsdp", "--fsdp.sharding_strategy", "FULL_SHARD"], dict(dp=4), "fsdp"),
    "tp2-ddp": (2, MP + ["ddp", "--model_parallel.tensor_parallel_size", "2"], dict(tp=2, dp=2), "ddp"),
    "tp2-fsdp": (2, MP + ["fsdp", "--model_parallel.tensor_parallel_size", "2"], dict(tp=2, dp=2), "fsdp"),
    "cp2-tp2": (2, MP + ["ddp", "--model_parallel.tensor_parallel_size", "2", "--model_parallel.context_parallel_size",
                         "2"], dict(tp=2, cp=2), "ddp"),
    "pp2-tp2": (2, MP + ["ddp", "--model_parallel.tensor_parallel_size", "2", "--model_parallel.pipeline_parallel_size",
                         "2"], dict(tp=2, pp=2), "ddp"),
}


def sim(*args, **kw):
    return subprocess.run(["bash", str(SIM), *args], check=True, text=True, capture_output=True, **kw).stdout


def run(build, name, work, label, steps, per_node, flags):
    """(bytes node 1 sent, mean step seconds over the ranks)."""
    before = int(sim("sent", name, "1"))
    logs = work / f"{label}-{steps}"
    cmd = [str(build / "bin" / "transformer_lm"), "--num_nodes", "2", "--devices", str(per_node), "--max_steps", str(steps),
           "--default_root_dir", str(logs), "--layers", str(LAYERS), "--dim", str(DIM), "--heads", "8",
           "--context", str(CONTEXT), "--batch_size", str(BATCH), "--limit_val_batches", "0",
           "--enable_checkpointing", "false", "--enable_progress_bar", "false", "--enable_model_summary", "false",
           "--logger", "false", *flags]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run(["bash", str(SIM), "run", name, "2", str(per_node), str(logs), "--", *cmd], text=True,
                          capture_output=True, env=env)
    if done.returncode:
        sys.exit(f"mesh_cluster: {label} failed:\n{done.stderr}")
    after = int(sim("sent", name, "1"))
    steps_s = [float(m.group(1)) for log in logs.glob("rank*.log")
               for m in re.finditer(r"^transformer_lm rank \d+: .* step_s (\S+)", log.read_text(), re.M)]
    return after - before, sum(steps_s) / len(steps_s)


def model_args(layout, rate_bits, compute_s):
    per_node, _, sizes, dp_mode = LAYOUTS[layout]
    argv = ["--params", str(PARAMS), "--replicated", str(REPLICATED), "--layers", str(LAYERS), "--dim", str(DIM),
            "--tokens", str(BATCH * CONTEXT), "--tp-allreduces", "6", "--devices", str(per_node), "--data-parallel", dp_mode,
            "--inter-gbs", str(rate_bits / 8e9), "--compute-s", str(compute_s)]
    for dim, size in sizes.items():
        argv += [f"--{dim}", str(size)]
    parser = argparse.ArgumentParser()
    mesh_model.add_arguments(parser)
    parsed = parser.parse_args(argv)
    assert mesh_model.check(parsed) is None, mesh_model.check(parsed)
    return parsed


def bits(rate):
    number, unit = re.fullmatch(r"(\d+)(gbit|mbit)", rate).groups()
    return int(number) * (1e9 if unit == "gbit" else 1e6)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build")
    parser.add_argument("--rates", nargs="+", default=["10gbit", "1gbit", "250mbit"])
    parser.add_argument("--only", nargs="+", choices=list(LAYOUTS), default=list(LAYOUTS))
    args = parser.parse_args()
    build = Path(args.build).resolve()
    name = f"mc{os.getpid() % 100000}"
    print(f"mesh_cluster: transformer_lm {LAYERS} x {DIM}, {PARAMS} parameters ({REPLICATED} kept whole under tp), "
          f"2 nodes x 2 ranks; load average {os.getloadavg()[0]:.2f}")
    print(f"{'layout':>9} {'rate':>8} {'sent_MB':>8} {'model_MB':>8} {'error':>7} {'step_s':>7} {'model_s':>7} {'error':>7}")
    compute = {}
    byte_errors, step_errors = [], []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for rate in args.rates:
                # A 1 ms token bucket: tp's and cp's many small transfers would pass in 8 ms bursts for free.
                sim("up", name, "2", rate, env=dict(os.environ, SIM_BURST_MS="1"))
                for layout in args.only:
                    per_node, flags = LAYOUTS[layout][:2]
                    short, _ = run(build, name, Path(tmp), f"{layout}-{rate}", 2, per_node, flags)
                    long, step = run(build, name, Path(tmp), f"{layout}-{rate}", LONG, per_node, flags)
                    sent = (long - short) / (LONG - 2)
                    probe = model_args(layout, bits(rate), 0.0)
                    node_bytes = sum(b for crosses, b, _ in mesh_model.link_bytes(probe).values() if crosses)
                    if layout not in compute:  # the first rate calibrates: the step less what its link cost
                        _, exposed = mesh_model.step_time(model_args(layout, bits(rate), step))
                        compute[layout] = step - sum(exposed.values())
                    predicted, _ = mesh_model.step_time(model_args(layout, bits(rate), compute[layout]))
                    byte_error, step_error = node_bytes / sent - 1, predicted / step - 1
                    byte_errors.append(abs(byte_error))
                    if rate != args.rates[0] and per_node == 1:  # 4 ranks on 2 cores: steps are the cores' too
                        step_errors.append(abs(step_error))
                    print(f"{layout:>9} {rate:>8} {sent / 1e6:8.2f} {node_bytes / 1e6:8.2f} {byte_error:+7.1%} "
                          f"{step:7.3f} {predicted:7.3f} {step_error:+7.1%}", flush=True)
        finally:
            subprocess.run(["bash", str(SIM), "down", name], capture_output=True)
    print(f"mesh_cluster: largest error of the bytes {max(byte_errors):.1%}, of the steps "
          f"{max(step_errors, default=float('nan')):.1%} (one rank per node, the rates after the first); "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
