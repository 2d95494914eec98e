"""Draws the curve `lr_find` wrote (lr,loss rows) as a PNG beside it: the
smoothed loss over the learning rate on a log axis, the suggested learning
rate marked (a dashed line and the point on the curve).

    .venv/bin/python scripts/plot_lr_find.py runs/digits/lr_find.csv [SUGGESTED_LR]

Prints the PNG's path. Needs matplotlib (scripts/requirements.txt,
installed into the venv by scripts/setup.sh); without it this says so and
exits 3 (the CSV holds the whole curve).
"""
import csv
import os
import sys


def main(path, suggestion=None):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_lr_find: matplotlib is not installed in this Python (%s); the curve is in %s" % (sys.executable, path))
        return 3
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        print("plot_lr_find: %s has no points" % path)
        return 2
    lrs = [float(r["lr"]) for r in rows]
    losses = [float(r["loss"]) for r in rows]
    fig, ax = plt.subplots()
    ax.plot(lrs, losses)
    ax.set_xscale("log")
    ax.set_xlabel("Learning rate")
    ax.set_ylabel("Loss (smoothed)")
    if suggestion is not None:
        lr = float(suggestion)
        nearest = min(range(len(lrs)), key=lambda i: abs(lrs[i] - lr))
        ax.axvline(lr, color="red", linestyle="--", label="suggested lr %g" % lr)
        ax.plot([lrs[nearest]], [losses[nearest]], "o", color="red", markersize=8)
        ax.legend()
    out = os.path.splitext(path)[0] + ".png"
    fig.savefig(out, dpi=100)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
