#!/usr/bin/env python3
"""Draws docs/scaling.png: the scaling model against the course's ResNet-50
table (left) and against the simulated cluster (right).

    .venv/bin/python tools/plot_scaling.py CLUSTER_CSV [--out docs/scaling.png]

CLUSTER_CSV is what `bench/cluster_scaling.py --csv` wrote. Needs matplotlib
(scripts/requirements.txt).
"""
import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scaling_model  # noqa: E402


def course_panel(ax):
    one_gpu = scaling_model.COURSE[0][2]
    for label, extra, style in (("model, communication only", [], "--"),
                                ("model + 12 s per epoch", ["--fixed-epoch-s", "12"], "-")):
        rows = scaling_model.course_rows(scaling_model.parse_args(["--course", *extra]))
        gpus = [n * d for n, d, _, _ in rows]
        ax.plot(gpus, [one_gpu / (g * m) for g, (_, _, _, m) in zip(gpus, rows)], style, marker=".", label=label)
    gpus = [n * d for n, d, _ in scaling_model.COURSE]
    ax.plot(gpus, [one_gpu / (g * m) for g, (_, _, m) in zip(gpus, scaling_model.COURSE)], "o", color="black",
            label="course (measured)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(gpus, [str(g) for g in gpus])
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("GPUs (A100, 4 per node)")
    ax.set_ylabel("efficiency vs 1 GPU")
    ax.set_title("ResNet-50 on ImageNet, 10 epochs")
    ax.legend(loc="lower left", fontsize=8)


def cluster_panel(ax, path):
    series = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            series[(row["link"], row["strategy"])].append(
                (int(row["nodes"]), float(row["step_s"]) * 1e3, float(row["model_s"]) * 1e3))
    for i, ((link, strategy), points) in enumerate(sorted(series.items())):
        points.sort()
        color = f"C{i}"
        nodes = [p[0] for p in points]
        ax.plot(nodes, [p[2] for p in points], "-" if strategy == "ddp" else "--", color=color, label=f"{strategy}, {link}")
        ax.plot(nodes, [p[1] for p in points], "o", color=color)
        ax.set_xticks(nodes)
    ax.set_xlabel("nodes (1 rank each)")
    ax.set_ylabel("ms per step")
    ax.set_title("Simulated cluster, 37.9 MB gradients: lines model, dots measured")
    ax.legend(fontsize=7)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cluster_csv")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs" / "scaling.png"))
    args = parser.parse_args()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    course_panel(left)
    cluster_panel(right, args.cluster_csv)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot_scaling: wrote {args.out}")


if __name__ == "__main__":
    main()
