#!/usr/bin/env python3
"""Predicts data-parallel step time, epoch time and efficiency before a job is queued.

    tools/scaling_model.py --step-s 0.41 --grad-mb 102 --nodes 1 2 4 8 16 32 --devices 4 \\
        --intra-gbs 230 --inter-gbs 25

From one device's step time (forward + backward + optimizer at the per-device
batch, data loading included), the gradient size, the bucket size and the
links, it models, per node count:

- the allreduce of S bytes over N ranks as a ring: 2(N-1)/N * S / B + 2(N-1) * alpha,
  with B and alpha the intra-node link inside one node and the inter-node link
  (per device: each device has its own NIC share) across nodes;
- ddp: buckets reduced while backward runs (backward = --backward-share of the
  step); what is exposed is the communication backward cannot hide, and at
  least the last bucket;
- ring (horovod): the same gradients fused into buffers of --fusion-mb, started
  every --cycle-ms, so each buffer waits half a cycle on average;
- fixed costs: --fixed-s once per run and --fixed-epoch-s per epoch (start-up,
  validation, loader warm-up) do not shrink with more devices.

`tools/scaling_model.py mesh --help`: the same for a device mesh (tensor,
context and pipeline parallelism with ddp or fsdp along dp; tools/mesh_model.py).

`--course` compares the model with the ResNet-50 course table (10 epochs of
ImageNet on JUWELS Booster-class nodes: 4 A100 per node with NVLink, 4 HDR200
InfiniBand NICs), calibrated on the 1-GPU time alone.
"""
import argparse
import math
import sys

IMAGENET_TRAIN = 1_281_167
# ResNet-50 on ImageNet, 10 epochs: (nodes, devices per node, minutes).
COURSE = [(1, 1, 342.0), (1, 4, 89.0), (4, 4, 24.8), (8, 4, 13 + 11 / 60), (16, 4, 6 + 56 / 60), (32, 4, 4.8)]


def ring_allreduce_s(size_bytes, ranks, bandwidth_bps, latency_s):
    """Lower bound of a ring allreduce: every byte crosses 2(N-1)/N links."""
    if ranks <= 1:
        return 0.0
    return 2 * (ranks - 1) / ranks * size_bytes / bandwidth_bps + 2 * (ranks - 1) * latency_s


def link(args, nodes):
    """(bandwidth in bytes/s, latency in s) of the slowest link the ring crosses."""
    if nodes > 1:
        return args.inter_gbs * 1e9, args.inter_latency_us * 1e-6
    return args.intra_gbs * 1e9, args.intra_latency_us * 1e-6


def step_time(args, nodes, strategy):
    """(step seconds, allreduce seconds, exposed seconds) at `nodes` nodes."""
    ranks = nodes * args.devices
    bandwidth, latency = link(args, nodes)
    grad = args.grad_mb * 1e6
    total = ring_allreduce_s(grad, ranks, bandwidth, latency)
    backward = args.step_s * args.backward_share
    if ranks == 1:
        return args.step_s, 0.0, 0.0
    if strategy == "ddp":
        chunk = min(args.bucket_mb * 1e6, grad)
    else:
        chunk = min(args.fusion_mb * 1e6, grad)
    buckets = math.ceil(grad / chunk)
    last = ring_allreduce_s(chunk, ranks, bandwidth, latency)
    # Buckets become ready evenly during backward; the reductions queue behind each other.
    hidden = backward * (buckets - 1) / buckets
    exposed = max(last, total - hidden)
    if strategy == "ring":
        exposed += args.cycle_ms * 1e-3 / 2
    return args.step_s + exposed, total, exposed


def run_time(args, nodes, strategy, epochs, batch):
    """Seconds for `epochs` epochs of `args.samples` samples at per-device `batch`."""
    ranks = nodes * args.devices
    steps = math.ceil(args.samples / (batch * ranks))
    step, _, _ = step_time(args, nodes, strategy)
    return epochs * (steps * step + args.fixed_epoch_s) + args.fixed_s


def table(args):
    print(f"{'nodes':>5} {'devices':>7} {'strategy':>8} {'step_ms':>8} {'allreduce_ms':>12} "
          f"{'exposed_ms':>10} {'epoch_min':>9} {'efficiency':>10}")
    single = args.step_s * math.ceil(args.samples / args.batch) + args.fixed_epoch_s
    for nodes in args.nodes:
        for strategy in args.strategy:
            step, total, exposed = step_time(args, nodes, strategy)
            ranks = nodes * args.devices
            epoch = run_time(args, nodes, strategy, 1, args.batch) - args.fixed_s
            efficiency = single / (ranks * epoch)
            print(f"{nodes:>5} {ranks:>7} {strategy:>8} {step * 1e3:8.1f} {total * 1e3:12.2f} "
                  f"{exposed * 1e3:10.2f} {epoch / 60:9.2f} {efficiency:10.1%}")


def calibrate_course(args):
    """Sets args' step time and samples from the course's 1-GPU time alone."""
    steps_one = math.ceil(IMAGENET_TRAIN / args.batch)
    args.step_s = (COURSE[0][2] * 60 - args.fixed_s) / args.epochs / steps_one - args.fixed_epoch_s / steps_one
    args.samples = IMAGENET_TRAIN


def course_rows(args):
    """(nodes, devices, course minutes, model minutes) for every row of the course table."""
    calibrate_course(args)
    rows = []
    for nodes, devices, minutes in COURSE:
        args.devices = devices
        rows.append((nodes, devices, minutes, run_time(args, nodes, "ddp", args.epochs, args.batch) / 60))
    return rows


def course(args):
    """The course table against the model, calibrated on the 1-GPU time only."""
    one_gpu_min = COURSE[0][2]
    rows = course_rows(args)
    print(f"calibration: {one_gpu_min} min on 1 GPU -> {args.step_s * 1e3:.0f} ms per step of {args.batch} images "
          f"({args.batch / args.step_s:.0f} img/s); gradients {args.grad_mb} MB; "
          f"NVLink {args.intra_gbs} GB/s, InfiniBand {args.inter_gbs} GB/s per GPU")
    print(f"{'nodes x gpus':>12} {'course_min':>10} {'model_min':>9} {'error':>7} {'course_eff':>10} {'model_eff':>9}")
    errors = []
    for nodes, devices, minutes, predicted in rows:
        error = (predicted - minutes) / minutes
        errors.append(abs(error))
        ranks = nodes * devices
        print(f"{f'{nodes} x {devices}':>12} {minutes:10.1f} {predicted:9.1f} {error:+7.1%} "
              f"{one_gpu_min / (ranks * minutes):10.1%} {one_gpu_min / (ranks * predicted):9.1%}")
    print(f"mean absolute error {sum(errors) / len(errors):.1%}, largest {max(errors):.1%}")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step-s", type=float, default=0.41, help="one device's step time in seconds")
    parser.add_argument("--grad-mb", type=float, default=102.2, help="gradient bytes per step, MB (ResNet-50 fp32: 102.2)")
    parser.add_argument("--bucket-mb", type=float, default=25.0, help="ddp bucket size, MB")
    parser.add_argument("--fusion-mb", type=float, default=64.0, help="horovod fusion buffer, MB")
    parser.add_argument("--cycle-ms", type=float, default=5.0, help="horovod cycle time, ms")
    parser.add_argument("--backward-share", type=float, default=0.6, help="share of the step spent in backward")
    parser.add_argument("--intra-gbs", type=float, default=230.0, help="allreduce bus bandwidth inside a node, GB/s")
    parser.add_argument("--intra-latency-us", type=float, default=10.0, help="per-hop latency inside a node, us")
    parser.add_argument("--inter-gbs", type=float, default=25.0, help="bandwidth between nodes per device, GB/s")
    parser.add_argument("--inter-latency-us", type=float, default=20.0, help="per-hop latency between nodes, us")
    parser.add_argument("--devices", type=int, default=4, help="devices (processes) per node")
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--strategy", nargs="+", default=["ddp", "ring"], choices=["ddp", "ring"])
    parser.add_argument("--samples", type=int, default=IMAGENET_TRAIN, help="training samples per epoch")
    parser.add_argument("--batch", type=int, default=256, help="per-device batch")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--fixed-s", type=float, default=0.0, help="fixed seconds per run (start-up)")
    parser.add_argument("--fixed-epoch-s", type=float, default=0.0, help="fixed seconds per epoch")
    parser.add_argument("--course", action="store_true", help="compare with the course's ResNet-50 table")
    return parser.parse_args(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["mesh"]:  # tensor, context and pipeline parallelism: tools/mesh_model.py
        import mesh_model
        return mesh_model.main(argv[1:])
    args = parse_args(argv)
    if args.course:
        course(args)
    else:
        table(args)


if __name__ == "__main__":
    sys.exit(main())
