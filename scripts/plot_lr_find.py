"""Draws the curve `lr_find` wrote (lr,loss rows) as a PNG beside it, with
the learning rate on a log axis and the suggestion marked.

    .venv/bin/python scripts/plot_lr_find.py runs/digits/lr_find.csv [SUGGESTED_LR]

Needs matplotlib, which the project's venv does not pin; without it this
says so and exits 3 (the CSV holds the whole curve).
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
    lrs = [float(r["lr"]) for r in rows]
    losses = [float(r["loss"]) for r in rows]
    fig, ax = plt.subplots()
    ax.plot(lrs, losses)
    ax.set_xscale("log")
    ax.set_xlabel("Learning rate")
    ax.set_ylabel("Loss (smoothed)")
    if suggestion is not None:
        ax.axvline(float(suggestion), color="red", linestyle="--", label="suggested lr %g" % float(suggestion))
        ax.legend()
    out = os.path.splitext(path)[0] + ".png"
    fig.savefig(out, dpi=100)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
