#!/usr/bin/env python3
"""tools/scaling_model.py: the ring bound, the overlap rule and the course calibration."""
import contextlib
import io
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import scaling_model as sm  # noqa: E402


def args_for(*argv):
    return sm.parse_args(list(argv))


# 2(N-1)/N * S/B + 2(N-1) * alpha, by hand: 4 ranks, 100 MB, 1 GB/s, 10 us.
assert abs(sm.ring_allreduce_s(100e6, 4, 1e9, 10e-6) - (1.5 * 0.1 + 6 * 10e-6)) < 1e-12
assert sm.ring_allreduce_s(100e6, 1, 1e9, 10e-6) == 0.0

# A slow link: the exposed communication is what backward cannot hide, and never less than the last bucket.
a = args_for("--step-s", "0.2", "--grad-mb", "40", "--bucket-mb", "10", "--inter-gbs", "0.125", "--devices", "2")
step, total, exposed = sm.step_time(a, 2, "ddp")
last = sm.ring_allreduce_s(10e6, 4, 0.125e9, 20e-6)
assert exposed >= last and abs(exposed - max(last, total - 0.2 * 0.6 * 3 / 4)) < 1e-12, (exposed, total)
assert abs(step - (0.2 + exposed)) < 1e-12
# A fast link hides everything but the last bucket.
a = args_for("--step-s", "0.4", "--inter-gbs", "25")
_, _, exposed = sm.step_time(a, 4, "ddp")
assert abs(exposed - sm.ring_allreduce_s(25e6, 16, 25e9, 20e-6)) < 1e-12
# The ring waits half a cycle on top.
_, _, ring_exposed = sm.step_time(a, 4, "ring")
assert ring_exposed > exposed

# The course comparison is calibrated on the 1-GPU time: it reproduces it exactly.
out = io.StringIO()
with contextlib.redirect_stdout(out):
    sm.main(["--course"])
lines = [line for line in out.getvalue().splitlines() if line.strip().startswith("1 x 1")]
assert lines and "342.0     342.0" in lines[0], out.getvalue()
rows = sm.course_rows(sm.parse_args(["--course"]))
assert [r[:3] for r in rows] == sm.COURSE and abs(rows[0][3] - 342.0) < 1e-9

# tools/plot_scaling.py draws both comparisons into a PNG (with the venv's matplotlib).
with tempfile.TemporaryDirectory() as tmp:
    cluster_csv = Path(tmp) / "cluster.csv"
    cluster_csv.write_text("link,nodes,strategy,step_s,compute_s,allreduce_s,exposed_s,hidden,model_s,error\n"
                           "1gbit,1,ddp,0.06,0.06,0.0,0.0,nan,0.06,0.0\n"
                           "1gbit,2,ddp,0.44,0.13,0.33,0.31,0.05,0.41,-0.08\n")
    png = Path(tmp) / "scaling.png"
    plot = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "tools" / "plot_scaling.py"),
                           str(cluster_csv), "--out", str(png)], capture_output=True, text=True)
    assert plot.returncode == 0, plot.stderr
    from PIL import Image
    with Image.open(png) as image:
        assert image.format == "PNG" and image.size[0] > 600 and image.size[1] > 300, image.size
print("scaling_model_test: ok")
