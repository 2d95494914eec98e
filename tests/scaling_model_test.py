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
# The mesh model (tools/mesh_model.py).
import mesh_model as mm  # noqa: E402


def mesh(*argv):
    parser = __import__("argparse").ArgumentParser()
    mm.add_arguments(parser)
    a = parser.parse_args(["--params", "1727744", "--replicated", "3584", "--layers", "2", "--dim", "256",
                           "--tokens", "512", "--devices", "2", "--compute-s", "0.2", *argv])
    assert mm.check(a) is None, mm.check(a)
    return a


# Which groups leave a node: 4 ranks in a row over nodes of 2 (one hop out per node), pairs 2 apart (one per rank).
assert mm.node_hops(4, 1, 2) == (True, 1) and mm.node_hops(2, 2, 2) == (True, 2)
assert mm.node_hops(2, 1, 2) == (False, 0) and mm.node_hops(1, 4, 2) == (False, 0)
P, R, WIRE = 1727744, 3584, 1514 / 1448
# FULL_SHARD over 4: two gathers of 3/4 of the gradients' bytes and Gloo's reduce-scatter at an all-reduce's 3/2.
full = mm.link_bytes(mesh("--dp", "4"))
assert abs(full["dp"][1] - 3 * 4 * P * WIRE) < 1 and full["dp"][0]
assert abs(mm.link_bytes(mesh("--dp", "4", "--no-gloo"))["dp"][1] - 2.25 * 4 * P * WIRE) < 1
# tp 2 x dp 2 with ddp: each of the node's 2 ranks all-reduces its half (and the whole replicated rows) with its peer.
tp_dp = mm.link_bytes(mesh("--tp", "2", "--dp", "2", "--data-parallel", "ddp"))
assert abs(tp_dp["dp"][1] - 2 * 4 * ((P - R) / 2 + R) * WIRE) < 1 and not tp_dp["tp"][0]
# pp 2 across nodes of 1: the second stage sends only the input's gradient back.
assert abs(mm.link_bytes(mesh("--pp", "2", "--devices", "1"))["pp"][1] - 4 * 512 * 256 * WIRE) < 1
# cp 2: the key-value block once forward, keys, values and their gradients twice backward, per block.
assert abs(mm.link_bytes(mesh("--cp", "2", "--devices", "1"))["cp"][1] - 2 * 10 * 4 * 256 * 256 * WIRE) < 1
# Against the bytes measured on the simulated cluster (bench/RESULTS.md, bench/mesh_cluster.py): within 3 %.
for argv, measured in [(["--dp", "4"], 21.30e6), (["--tp", "2", "--dp", "2", "--data-parallel", "ddp"], 7.25e6),
                       (["--tp", "2", "--dp", "2"], 14.20e6), (["--tp", "2", "--pp", "2"], 1.10e6),
                       (["--tp", "2", "--cp", "2", "--data-parallel", "ddp"], 12.74e6),
                       (["--tp", "2", "--devices", "1", "--tp-allreduces", "6"], 7.78e6)]:
    predicted = sum(node for crosses, node, _ in mm.link_bytes(mesh(*argv)).values() if crosses)
    assert abs(predicted / measured - 1) < 0.03, (argv, predicted, measured)
# Exposure: fsdp waits for forward's gathers at least; a slow link bounds a pipeline by its transfers.
step, exposed = mm.step_time(mesh("--dp", "2", "--devices", "1", "--inter-gbs", "0.03125"))
assert exposed["dp"] >= mm.link_bytes(mesh("--dp", "2", "--devices", "1"))["dp"][1] / 4 / 0.03125e9 - 1e-9
slow = mm.step_time(mesh("--pp", "2", "--devices", "1", "--inter-gbs", "1e-4"))[1]["pp"]
assert slow > 4 * 512 * 256 * WIRE / 1e5, slow
# A step from one device's: split over tp x cp x pp, with the pipeline's bubble.
a = mesh("--pp", "2", "--tp", "2", "--inter-gbs", "1e6")
a.compute_s, a.step_s = None, 1.0
assert abs(mm.step_time(a)[0] - 0.25 * (1 + 1 / 5)) < 1e-3
# Mis-sized meshes and missing compute: one line.
a = mesh()
a.tp = 3
assert "do not fill nodes" in mm.check(a)
a.devices = 3
assert "--dim 256" in mm.check(a) and "--tp 3" in mm.check(a)
print("scaling_model_test: ok")
