"""The ensemble example's held-out error against kappa, one line per amplitude.

    plot_error.py heldout.csv out.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

rows = list(csv.DictReader(open(sys.argv[1])))
fig, ax = plt.subplots(figsize=(5, 3.5))
for amplitude in sorted({r["amplitude"] for r in rows}, key=float):
    points = sorted((float(r["kappa"]), float(r["relative_error"])) for r in rows if r["amplitude"] == amplitude)
    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"A = {amplitude}")
ax.set_xlabel("kappa (held out)")
ax.set_ylabel("relative L2 error")
ax.set_title("surrogate vs solver on unseen parameters")
ax.legend()
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=120)
print(f"plot_error: {sys.argv[2]}")
