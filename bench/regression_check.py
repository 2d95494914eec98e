#!/usr/bin/env python3
"""Speed regression check: each headline ratio of bench/RESULTS.md measured
again as the median of alternating pairs, and compared with the value
recorded in RESULTS.md's "Regression check" table.

    .venv/bin/python bench/regression_check.py [BUILD_DIR] [--pairs N] [--only a,b]

A pair runs the two sides of a ratio one right after the other (their order
swapped from pair to pair), so drift of the shared machine hits both. A
figure has moved when its median differs from the recorded value by more
than its noise: the larger of the recorded noise and half the spread of this
run's pairs. Prints one line per figure and exits 1 when a figure moved the
wrong way. Not a test: run it on a quiet machine before you stop.
"""
import importlib.machinery
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
# Ranks for the process_group_backend mpi figures (Open MPI; as root too).
MPIRUN = ["env", "-u", "MASTER_ADDR", "-u", "MASTER_PORT", "mpirun", "--allow-run-as-root", "--oversubscribe",
          "-x", "OMP_NUM_THREADS"]


def run(command, env=None):
    """Runs a command; returns its stdout+stderr; raises with the output on failure."""
    full_env = dict(os.environ, **(env or {}))
    command = [str(c) for c in command]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=full_env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}")
    return done.stdout


def number(pattern, text):
    match = re.search(pattern, text)
    if not match:
        raise RuntimeError(f"no match for {pattern!r} in:\n{text[-2000:]}")
    return float(match.group(1))


def timed(command, env=None):
    start = time.perf_counter()
    run(command, env)
    return time.perf_counter() - start


class Figures:
    """One method per figure: runs one pair and returns its ratio."""

    def __init__(self, build, work):
        self.build = build
        self.bin = build / "bin"
        self.work = work
        self.flip = False
        self._images = None

    def swap(self, a, b):
        """Runs a() and b() in this pair's order; returns (a's, b's) results."""
        if self.flip:
            rb = b()
            return a(), rb
        ra = a()
        return ra, b()

    def trainer_vs_raw(self):
        # Alternates raw and Trainer epochs itself: one run is one pair.
        out = run([self.bin / "trainer_overhead", "--epochs", "9"])
        return number(r"ratio ([\d.]+)", out)

    def ddp_epoch_s(self, devices, backend="auto"):
        # Per-epoch time on the digits MLP, batch 16 per process: (42 epochs -
        # 2 epochs) / 40, so start-up cancels out (over 20 epochs, mpirun's
        # start-up jitter alone moved the ratio by 0.3). With backend mpi the
        # ranks come from mpirun.
        launcher = MPIRUN + ["-np", str(devices)] if backend == "mpi" else []

        def fit(epochs):
            return timed(launcher + [self.bin / "cinic10", "fit", "--config", ROOT / "examples/cinic10/digits.yaml",
                                     "--model.arch", "mlp", "--data.batch_size", "16", "--data.num_workers", "1",
                                     "--trainer.limit_val_batches", "0", "--trainer.num_sanity_val_steps", "0",
                                     "--trainer.accelerator", "cpu", "--trainer.devices", str(devices),
                                     "--trainer.process_group_backend", backend,
                                     "--trainer.max_epochs", str(epochs), "--trainer.enable_progress_bar", "false",
                                     "--trainer.default_root_dir", self.work / "ddp", "--test_after_fit", "false",
                                     "--data.root", ROOT / "data/digits-cinic"])
        return (fit(42) - fit(2)) / 40

    def ddp_2_over_1(self):
        one, two = self.swap(lambda: self.ddp_epoch_s(1), lambda: self.ddp_epoch_s(2))
        return two / one

    def ddp_2_over_1_mpi(self):
        one, two = self.swap(lambda: self.ddp_epoch_s(1), lambda: self.ddp_epoch_s(2, "mpi"))
        return two / one

    def loader_vs_torchvision(self):
        # The ImageNet train recipe (RandomResizedCrop 224 + flip, 2 workers
        # each, both pinned to the same CPUs) on generated 500x375 JPEGs.
        if self._images is None:  # generated once, for every pair
            lvt = importlib.machinery.SourceFileLoader("lvt", str(ROOT / "bench/loader_vs_torchvision")).load_module()
            self._images = lvt.make_data(self.work / "images", quick=True)[0]
        pin = ["taskset", "-c", "0-1"]
        common = [self._images, "imagenet-train", 32, 2, 25]

        def ours():
            out = run(pin + [self.bin / "loader_bench", self._images, "--pipeline", "imagenet-train",
                             "--batch_size", "32", "--num_workers", "2", "--batches", "25"])
            return number(r"loader_bench: \S+ ([\d.]+) img/s", out)

        def theirs():
            out = run(pin + [sys.executable, ROOT / "bench/loader_vs_torchvision", "--torchvision"] + common)
            return number(r"torchvision: \S+ ([\d.]+) img/s", out)
        a, b = self.swap(ours, theirs)
        return a / b

    def ring_vs_gloo(self):
        def busbw(algo):
            out = run([self.bin / "allreduce_bench", "--algo", algo, "--size_mb", "64", "--iters", "12",
                       "--world_size", "2"], {"OMP_NUM_THREADS": "1"})
            return number(r"busbw ([\d.]+) GB/s", out)
        a, b = self.swap(lambda: busbw("ring"), lambda: busbw("gloo"))
        return a / b

    def mpi_vs_gloo(self):
        def busbw(algo):
            launcher = MPIRUN + ["-np", "2"] if algo == "mpi" else []
            out = run(launcher + [self.bin / "allreduce_bench", "--algo", algo, "--size_mb", "64", "--iters", "12",
                                  "--world_size", "2"], {"OMP_NUM_THREADS": "1"})
            return number(r"busbw ([\d.]+) GB/s", out)
        a, b = self.swap(lambda: busbw("mpi"), lambda: busbw("gloo"))
        return a / b

    def horovod_mpi_vs_gloo(self):
        # Horovod's ring (fulgur's, point to point) over MPI against over Gloo.
        def busbw(backend):
            launcher = MPIRUN + ["-np", "2"] if backend == "mpi" else []
            out = run(launcher + [self.bin / "allreduce_bench", "--algo", "ring", "--backend", backend, "--size_mb",
                                  "64", "--iters", "12", "--world_size", "2"], {"OMP_NUM_THREADS": "1"})
            return number(r"busbw ([\d.]+) GB/s", out)
        a, b = self.swap(lambda: busbw("mpi"), lambda: busbw("gloo"))
        return a / b

    def full_shard_vs_ddp(self, backend="auto"):
        # Speed of FULL_SHARD relative to ddp (ddp s/step over FULL_SHARD's)
        # on 2 ranks of the transformer_lm example, as bench/sharding.sh.
        def step_s(strategy):
            env = {"SPEED_ONLY": strategy, "STEPS": "8", "BACKEND": backend}
            out = run(["bash", ROOT / "bench/sharding.sh", self.build], env)
            return number(r"([\d.]+) s/step", out)
        ddp, full = self.swap(lambda: step_s("ddp"), lambda: step_s("FULL_SHARD"))
        return ddp / full

    def full_shard_vs_ddp_mpi(self):
        return self.full_shard_vs_ddp("mpi")

    def async_save_blocking(self):
        # How long AsyncCheckpointIO::save blocks over a synchronous save.
        out = run([self.bin / "checkpoint_save", "--runs", "1", "--dir", self.work])
        return number(r"checkpoint_save async: .* ratio ([\d.]+)", out)


# name: (higher is better, what it is)
FIGURES = {
    "trainer_vs_raw": (True, "Trainer it/s over a raw LibTorch loop's"),
    "ddp_2_over_1": (False, "2-process over 1-process epoch time, digits MLP batch 16"),
    "ddp_2_over_1_mpi": (False, "the same with process_group_backend mpi (ranks from mpirun)"),
    "mpi_vs_gloo": (True, "MPI's allreduce busbw over Gloo's, 2 ranks, 64 MB"),
    "horovod_mpi_vs_gloo": (True, "fulgur's ring busbw over MPI over the same over Gloo, 2 ranks, 64 MB"),
    "loader_vs_torchvision": (True, "img/s over torchvision's, imagenet-train, 2 workers"),
    "ring_vs_gloo": (True, "ring allreduce busbw over Gloo's, 2 ranks, 64 MB"),
    "full_shard_vs_ddp": (True, "FULL_SHARD speed over ddp's, transformer_lm, 2 ranks"),
    "full_shard_vs_ddp_mpi": (True, "the same with process_group_backend mpi (ranks from mpirun)"),
    "async_save_blocking": (False, "async save()'s blocking time over a synchronous save"),
}


def recorded_values():
    """The 'Regression check' table of RESULTS.md: name -> (value, noise)."""
    values = {}
    # That section only: later sections' tables name the same figures.
    section = RESULTS.read_text().split("\n## Regression check\n", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip(" `*") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] in FIGURES:
            values[cells[0]] = (float(cells[1]), float(cells[2]))
    return values


def main():
    args = list(sys.argv[1:])
    pairs, only = 5, list(FIGURES)
    if "--pairs" in args:
        i = args.index("--pairs")
        pairs = int(args[i + 1])
        del args[i:i + 2]
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1].split(",")
        del args[i:i + 2]
        unknown = [n for n in only if n not in FIGURES]
        if unknown:
            sys.exit(f"regression_check: unknown figure(s) {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    build = Path(args[0] if args else ROOT / "build").resolve()
    recorded = recorded_values()
    print(f"regression_check: {pairs} pairs per figure; load average before {os.getloadavg()[0]:.2f}", flush=True)
    regressions = []
    with tempfile.TemporaryDirectory() as tmp:
        figures = Figures(build, Path(tmp))
        for name in only:
            higher_better, what = FIGURES[name]
            ratios = []
            for p in range(pairs):
                figures.flip = p % 2 == 1
                ratios.append(getattr(figures, name)())
            median = statistics.median(ratios)
            spread = (max(ratios) - min(ratios)) / 2
            line = f"regression_check[{name}]: {median:.3f} (pairs {' '.join(f'{r:.3f}' for r in ratios)}; {what})"
            if name not in recorded:
                print(f"{line}; nothing recorded in bench/RESULTS.md", flush=True)
                continue
            value, noise = recorded[name]
            allowed = max(noise, spread)
            moved = abs(median - value) > allowed
            better = (median > value) == higher_better
            verdict = "held" if not moved else ("moved, better" if better else "MOVED, WORSE")
            print(f"{line}; recorded {value:.3f} ± {allowed:.3f}: {verdict}", flush=True)
            if moved and not better:
                regressions.append(name)
    print(f"regression_check: load average after {os.getloadavg()[0]:.2f}; "
          f"{'worse: ' + ', '.join(regressions) if regressions else 'nothing moved the wrong way'}")
    sys.exit(1 if regressions else 0)


if __name__ == "__main__":
    main()
