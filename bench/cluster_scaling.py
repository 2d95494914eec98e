#!/usr/bin/env python3
"""DDP's overlapped buckets against the Horovod-style ring with fusion on a
simulated cluster whose links are the bottleneck, and the scaling model
(tools/scaling_model.py) checked against both. Needs root (network namespaces).

    python3 bench/cluster_scaling.py [BUILD_DIR] [--rates 2gbit 1gbit 500mbit] [--nodes 1 2 4] [--csv FILE]

The cluster is scripts/sim_cluster.sh: one namespace per node on a bridge,
every node's link limited to RATE each way by tc tbf, one rank per node.
The model is build/bin/ddp_scaling at --model.width 2048 (a 512-2048-2048-
2048-10 MLP: 9.46 M parameters, 37.9 MB of fp32 gradients) with 64 samples
per rank and step, one thread per rank.

Per node count N it measures:
- compute: the step time of N independent single-process runs at once, as
  the N ranks share this machine's cores (the "one device" step time the
  model is calibrated with; on a real cluster every node has its own);
- step: the distributed run's step time, for `ddp` (25 MB buckets reduced
  from the gradient hooks) and `horovod` (ring allreduce, 64 MB fusion
  buffers, 5 ms cycle);
- allreduce: one allreduce of all the gradients alone (Gloo's for ddp,
  fulgur's ring for horovod), and its bandwidth against the bound
  2(N-1)/N * S / B, B being the link's TCP payload rate (1448 of every 1514
  bytes on the wire);
- hidden: the share of the allreduce hidden behind compute,
  (compute + allreduce - step) / allreduce;
and the scaling model's step time from compute, the gradient and bucket
sizes and the link, with its error against the measured step.
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import scaling_model  # noqa: E402

SIM = ROOT / "scripts" / "sim_cluster.sh"
WIDTH, BATCH, BATCHES, EPOCHS = 2048, 64, 8, 3
PARAMS = 512 * WIDTH + WIDTH + 2 * (WIDTH * WIDTH + WIDTH) + WIDTH * 10 + 10
GRAD_BYTES = 4 * PARAMS
MIB = 1 << 20
BUCKET_MB, FUSION_MB, CYCLE_MS = 25 * MIB / 1e6, 64 * MIB / 1e6, 5.0  # fulgur's defaults (MiB) in MB
PAYLOAD = 1448 / 1514  # TCP payload per Ethernet frame at MTU 1500 with timestamps
# Backward does twice the forward's matrix products in an MLP; the optimizer step is small.
BACKWARD_SHARE = 0.65


def rate_bytes_per_s(rate):
    number, unit = re.fullmatch(r"(\d+)(gbit|mbit|kbit)", rate).groups()
    return int(number) * {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}[unit] / 8


def fit_command(build, report, extra):
    return ([str(build / "bin" / "ddp_scaling"), "fit", "--seed_everything", "0", "--trainer.accelerator", "cpu",
             "--trainer.max_epochs", str(EPOCHS), "--trainer.logger", "false", "--trainer.enable_progress_bar",
             "false", "--trainer.enable_checkpointing", "false", "--trainer.enable_model_summary", "false",
             "--trainer.process_group_timeout", "300", "--data.batch_size", str(BATCH), "--data.batches",
             str(BATCHES), "--model.width", str(WIDTH), "--model.report", str(report)] + extra)


def mean_step(report):
    """Mean seconds per step over the timed epochs (the report's 4th column)."""
    rows = [line.split() for line in Path(report).read_text().splitlines()]
    return sum(float(r[3]) for r in rows) / len(rows)


def calibrate(build, work, nodes):
    """Step seconds of `nodes` independent single-process runs at once."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    reports = [work / f"compute{nodes}.{i}" for i in range(nodes)]
    procs = [subprocess.Popen(fit_command(build, r, ["--trainer.devices", "1"]), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for r in reports]
    for p in procs:
        _, err = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit(f"cluster_scaling: calibration run failed:\n{err.decode()[-2000:]}")
    return sum(mean_step(r) for r in reports) / nodes


def sim(*args, timeout=900):
    result = subprocess.run(["bash", str(SIM), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        sys.exit(f"cluster_scaling: sim_cluster.sh {args[0]} failed:\n{result.stdout}{result.stderr}")
    return result


def distributed_step(build, work, name, nodes, strategy):
    report = work / f"{strategy}{nodes}"
    report.unlink(missing_ok=True)
    sim("run", name, nodes, 1, work / "logs", "--", "env", "OMP_NUM_THREADS=1",
        *fit_command(build, report, ["--trainer.num_nodes", str(nodes), "--trainer.devices", "1",
                                     "--trainer.strategy", strategy]))
    return mean_step(report)


def allreduce_busbw(build, work, name, nodes, algo):
    """Bus bandwidth in bytes/s of one allreduce of the gradients' size."""
    sim("run", name, nodes, 1, work / "logs", "--", "env", "OMP_NUM_THREADS=1", build / "bin" / "allreduce_bench",
        "--algo", algo, "--size_mb", f"{GRAD_BYTES / MIB:.3f}", "--iters", "3", "--world_size", nodes)
    text = (work / "logs" / "rank0.log").read_text()
    return float(re.search(r"busbw ([0-9.]+) GB/s", text).group(1)) * 1e9


def model_step(compute, nodes, strategy, payload_bps):
    args = scaling_model.parse_args([
        "--step-s", str(compute), "--grad-mb", str(GRAD_BYTES / 1e6), "--bucket-mb", str(BUCKET_MB),
        "--fusion-mb", str(FUSION_MB), "--cycle-ms", str(CYCLE_MS), "--backward-share", str(BACKWARD_SHARE),
        "--inter-gbs", str(payload_bps / 1e9), "--inter-latency-us", "50", "--devices", "1"])
    return scaling_model.step_time(args, nodes, "ddp" if strategy == "ddp" else "ring")[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default=str(ROOT / "build"))
    parser.add_argument("--rates", nargs="+", default=["2gbit", "1gbit", "500mbit"])
    parser.add_argument("--nodes", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    opts = parser.parse_args()
    build = Path(opts.build).resolve()
    if os.geteuid() != 0:
        sys.exit("cluster_scaling: needs root (ip netns, tc)")
    print(f"cluster_scaling: {PARAMS / 1e6:.2f} M parameters, {GRAD_BYTES / 1e6:.1f} MB of gradients, "
          f"batch {BATCH} per rank; load: {os.getloadavg()[0]:.2f}")
    rows, bandwidth = [], []
    name = f"cs{os.getpid() % 100000}"
    with tempfile.TemporaryDirectory(prefix="cluster-scaling-") as tmp:
        work = Path(tmp)
        compute = {n: calibrate(build, work, n) for n in opts.nodes}
        for n in opts.nodes:
            print(f"  compute with {n} rank(s) on this machine: {compute[n] * 1e3:.0f} ms/step")
        try:
            for rate in opts.rates:
                link = rate_bytes_per_s(rate) * PAYLOAD
                sim("up", name, max(opts.nodes), rate)
                for n in opts.nodes:
                    for strategy, algo in (("ddp", "gloo"), ("horovod", "ring")):
                        if n == 1:
                            step, allreduce = compute[1], 0.0
                        else:
                            step = distributed_step(build, work, name, n, strategy)
                            busbw = allreduce_busbw(build, work, name, n, algo)
                            allreduce = 2 * (n - 1) / n * GRAD_BYTES / busbw
                            bandwidth.append((rate, n, algo, busbw, link))
                        hidden = (compute[n] + allreduce - step) / allreduce if allreduce else float("nan")
                        model = model_step(compute[n], n, strategy, link)
                        rows.append((rate, n, strategy, step, compute[n], allreduce, step - compute[n], hidden,
                                     model, (model - step) / step))
                        print(f"  {rate} {n} node(s) {strategy}: step {step * 1e3:.0f} ms, model {model * 1e3:.0f} ms")
        finally:
            sim("down", name)

    print("\n| link | nodes | strategy | step ms | compute ms | allreduce ms | exposed ms | hidden | model ms | error |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rate, n, strategy, step, comp, allreduce, exposed, hidden, model, error in rows:
        hidden_text = "–" if math.isnan(hidden) else f"{max(0.0, min(1.0, hidden)):.0%}"
        print(f"| {rate} | {n} | {strategy} | {step * 1e3:.0f} | {comp * 1e3:.0f} | {allreduce * 1e3:.0f} | "
              f"{exposed * 1e3:.0f} | {hidden_text} | {model * 1e3:.0f} | {error:+.1%} |")
    errors = [abs(r[9]) for r in rows if r[1] > 1]
    if errors:
        print(f"\ncluster_scaling: model vs measured step, {len(errors)} distributed runs: "
              f"mean absolute error {sum(errors) / len(errors):.1%}, largest {max(errors):.1%}")
    print("\n| link | nodes | allreduce | busbw MB/s | link payload MB/s | of the bound |")
    print("|---|---|---|---|---|---|")
    for rate, n, algo, busbw, link in bandwidth:
        print(f"| {rate} | {n} | {algo} | {busbw / 1e6:.1f} | {link / 1e6:.1f} | {busbw / link:.0%} |")
    print(f"\ncluster_scaling: load after: {os.getloadavg()[0]:.2f}")
    if opts.csv:
        with open(opts.csv, "w") as f:
            f.write("link,nodes,strategy,step_s,compute_s,allreduce_s,exposed_s,hidden,model_s,error\n")
            for row in rows:
                f.write(",".join(str(v) for v in row) + "\n")


if __name__ == "__main__":
    main()
