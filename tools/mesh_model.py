#!/usr/bin/env python3
"""The scaling model on a device mesh: the bytes every node sends over its
link per step, and the step time, for pp x dp x cp x tp with ddp or fsdp
along dp (tools/scaling_model.py mesh ...).

    tools/scaling_model.py mesh --params 1727744 --replicated 3584 --layers 2 --dim 256 \\
        --tokens 512 --tp 2 --dp 2 --devices 2 --data-parallel ddp --compute-s 0.15 --inter-gbs 0.125

(--inter-gbs is a node's whole link, not a device's share as in the
data-parallel model: the mesh model counts the bytes every node sends.)

Ranks are ordered as fulgur's DeviceMesh orders them by default
(model_parallel.mesh_order dp,cp,tp): pp outermost, then dp, cp, tp innermost; a node holds `--devices` consecutive ranks. Per step and
rank, with L = ((P - R) / tp + R) / pp the parameters a rank holds (R
those every tp rank keeps whole: norms, row-split layers' biases), A = the
tokens a rank runs per step times dim, n the group's size:

- dp (the gradients, over dp x cp, as fulgur reduces them): ddp all-reduces
  4L bytes, a ring hop 2(n-1)/n 4L; fsdp all-gathers twice (forward,
  backward) and reduce-scatters: 2 (n-1)/n 4L, plus the reduce-scatter's
  hop, (n-1)/n 4L in a ring, but 2(n-1)/n 4L on Gloo, which moves an
  all-reduce's bytes for it (measured on the simulated cluster: node 1
  sent 1.57 S for a reduce-scatter of S over 4 ranks, as for the
  all-reduce; the ring needs 0.75 S);
- tp: --tp-allreduces all-reduces of A per block (4 with a fused qkv, as
  Megatron's; 6 with separate q, k, v: each column-split layer all-reduces
  its input's gradient) and 2 for the embedding and the head, a hop
  2(n-1)/n 4A each;
- cp (ring attention): per block, n - 1 sends of the key and value block
  forward and n sends of keys, values and their gradients backward:
  (2(n-1) + 4n) 4A / tp bytes to the next rank;
- pp: each stage sends its output's 4A / (tp under sequence parallelism)
  forward and the input's gradient back, to the same rank of the next
  (previous) stage.

A group whose ranks sit on more than one node crosses the links: each
ring has one hop out of every node it spans, and a node carries the
hops of all the groups its ranks are in. The bytes on the wire are the
payload's times 1514/1448 (Ethernet, IP and TCP headers at MTU 1500).
The step is the compute (`--compute-s`: the layout's step with links that
cost nothing; or one device's step split over tp x cp x pp with the
pipeline's bubble) plus the communication it does not hide: ddp's
buckets before the last hide behind backward (tools/scaling_model.py);
fsdp's forward gathers are waited for (forward_prefetch is off), its
backward gathers and reduce-scatters hide behind the other units'
backward; tp's all-reduces are waited for; ring attention's forward
passes hide behind its compute, backward's are waited for; a pipeline
waits for 2(p-1) micro-batch transfers (the fill and the drain) or, where
the link is slower than the stages, for every micro-batch's.
"""
import argparse
import math
import sys

WIRE = 1514 / 1448  # bytes on the wire per payload byte (Ethernet + IP + TCP with timestamps, MTU 1500)
ORDER = ("pp", "dp", "cp", "tp")  # outermost first, as DeviceMesh


def strides(sizes):
    """Rank distance between neighbours of each dimension (tp innermost)."""
    out, stride = {}, 1
    for dim in reversed(ORDER):
        out[dim] = stride
        stride *= sizes[dim]
    return out


def node_hops(size, stride, devices):
    """(crosses nodes, ring hops leaving each node) for groups of `size` ranks `stride` apart."""
    if size <= 1 or stride * size <= devices:
        return False, 0
    members = 1 if stride >= devices else min(size, devices // stride)  # of one group on one node
    return True, devices // members  # one hop out of the node per group it holds ranks of


def bubble(pp, microbatches, schedule, virtual_stages=2):
    """The idle share of a pipeline step with equal passes (the textbook formulas)."""
    if pp <= 1:
        return 0.0
    if schedule == "interleaved_1f1b":
        return (pp - 1) / (virtual_stages * microbatches + pp - 1)
    if schedule == "zero_bubble":  # ZB-H1: a third of 1f1b's with F = B = W
        return (pp - 1) / (3 * microbatches + pp - 1)
    return (pp - 1) / (microbatches + pp - 1)


def per_rank_bytes(a):
    """Payload bytes one rank sends per step in each dimension's collectives, as one ring hop."""
    sizes = {"pp": a.pp, "dp": a.dp, "cp": a.cp, "tp": a.tp}
    local = ((a.params - a.replicated) / a.tp + a.replicated) / a.pp
    act = a.tokens / a.cp * a.dim  # elements of one rank's activations per step
    n = a.dp * a.cp
    out = {}
    grads = 4 * local
    if n > 1:
        if a.data_parallel == "ddp":
            out["dp"] = 2 * (n - 1) / n * grads
        else:
            scatter = (2 if a.gloo else 1) * (n - 1) / n * grads
            out["dp"] = 2 * (n - 1) / n * grads + scatter
    if a.tp > 1:
        out["tp"] = (a.tp_allreduces * a.layers + 2) * 2 * (a.tp - 1) / a.tp * 4 * act
    if a.cp > 1:
        out["cp"] = a.layers * (2 * (a.cp - 1) + 4 * a.cp) * 4 * act / a.tp
    if a.pp > 1:
        out["pp"] = 2 * 4 * act / (a.tp if a.sequence_parallel else 1)  # forward and back, a middle stage
    return out, sizes


def link_bytes(a):
    """{dimension: (crosses nodes, wire bytes each node sends over its link per step, rank's wire bytes)}."""
    rank_bytes, sizes = per_rank_bytes(a)
    st = strides(sizes)
    out = {}
    for dim, payload in rank_bytes.items():
        size, stride = sizes[dim], st[dim]
        if dim == "dp":  # fulgur reduces gradients over dp x cp: one group, cp's stride
            size, stride = a.dp * a.cp, st["cp"]
        crosses, hops = node_hops(size, stride, a.devices)
        if dim == "pp" and crosses:
            hops = a.devices  # every rank of a stage sends to its peer in the next node; an end stage one way
            payload = payload / 2 if a.pp == 2 else payload
        out[dim] = (crosses, hops * payload * WIRE, payload * WIRE)
    return out


def step_time(a):
    """(step seconds, {dimension: exposed seconds}) on the given links."""
    compute = a.compute_s
    if compute is None:
        compute = a.step_s / (a.tp * a.cp * a.pp) * (1 + bubble(a.pp, a.microbatches, a.schedule))
    exposed = {}
    for dim, (crosses, node, rank) in link_bytes(a).items():
        seconds = node / (a.inter_gbs * 1e9) if crosses else rank / (a.intra_gbs * 1e9)
        if dim == "dp" and a.data_parallel == "ddp":
            buckets = max(1, math.ceil(4 * ((a.params - a.replicated) / a.tp + a.replicated) / a.pp / (a.bucket_mb * 1e6)))
            hidden = compute * a.backward_share * (buckets - 1) / buckets
            seconds = max(seconds / buckets, seconds - hidden)
        if dim == "dp" and a.data_parallel == "fsdp":
            # Forward's gathers are waited for (forward_prefetch off); backward's
            # gather (prefetched) and reduce-scatter run behind the other units'
            # backward, all but the last unit's.
            scatter = 2 if a.gloo else 1
            forward = seconds / (2 + scatter)
            backward = seconds - forward
            seconds = forward + max(backward / a.units,
                                    backward - compute * a.backward_share * (a.units - 1) / a.units)
        if dim == "cp":  # forward sends the next block while computing with this one; backward waits for each
            seconds *= 4 * a.cp / (2 * (a.cp - 1) + 4 * a.cp)
        if dim == "pp":
            per_micro = seconds / a.microbatches
            seconds = max(2 * (a.pp - 1) * per_micro, seconds + 2 * (a.pp - 1) * per_micro - compute)
        exposed[dim] = seconds
    return compute + sum(exposed.values()), exposed


def add_arguments(parser):
    parser.add_argument("--params", type=float, required=True, help="the model's parameters (count)")
    parser.add_argument("--replicated", type=float, default=0, help="parameters every tp rank keeps whole")
    parser.add_argument("--layers", type=int, required=True, help="transformer blocks")
    parser.add_argument("--dim", type=int, required=True, help="hidden size")
    parser.add_argument("--tokens", type=int, required=True, help="tokens per dp rank and step (batch x sequence)")
    for dim in ORDER:
        parser.add_argument(f"--{dim}", type=int, default=1, help=f"{dim} size")
    parser.add_argument("--devices", type=int, default=4, help="ranks per node")
    parser.add_argument("--data-parallel", choices=["ddp", "fsdp"], default="fsdp")
    parser.add_argument("--gloo", action=argparse.BooleanOptionalAction, default=True,
                        help="Gloo's reduce-scatter (an all-reduce's bytes); --no-gloo for a ring's (NCCL)")
    parser.add_argument("--sequence-parallel", action="store_true")
    parser.add_argument("--tp-allreduces", type=int, default=4,
                        help="tp all-reduces per block and step: 4 with a fused qkv (Megatron), 6 with separate q, k, v")
    parser.add_argument("--units", type=int, default=None, help="fsdp units (default: the blocks and the root)")
    parser.add_argument("--microbatches", type=int, default=4)
    parser.add_argument("--schedule", default="1f1b", choices=["gpipe", "1f1b", "interleaved_1f1b", "zero_bubble"])
    parser.add_argument("--compute-s", type=float, default=None, help="the layout's step on free links, s")
    parser.add_argument("--step-s", type=float, default=None, help="or one device's step at the dp rank's batch, s")
    parser.add_argument("--bucket-mb", type=float, default=26.2, help="ddp bucket, MB")
    parser.add_argument("--backward-share", type=float, default=0.6)
    parser.add_argument("--intra-gbs", type=float, default=230.0, help="per device inside a node, GB/s")
    parser.add_argument("--inter-gbs", type=float, default=100.0,
                        help="each node's whole link to the others, GB/s (all its NICs: 4 x 200 Gbit/s = 100)")


def check(a):
    """One line naming the values that do not fit."""
    world = a.pp * a.dp * a.cp * a.tp
    if world % a.devices and a.devices % world:
        return f"pp x dp x cp x tp = {world} ranks do not fill nodes of --devices {a.devices}"
    if a.dim % a.tp or a.tokens % a.cp:
        return f"--dim {a.dim} and --tokens {a.tokens} must divide by --tp {a.tp} and --cp {a.cp}"
    if a.units is None:
        a.units = a.layers + 1
    if a.compute_s is None and a.step_s is None:
        return "give --compute-s (the layout's step) or --step-s (one device's)"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="scaling_model.py mesh", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    a = parser.parse_args(argv)
    error = check(a)
    if error:
        parser.error(error)
    step, exposed = step_time(a)
    print(f"{'dim':>4} {'crosses':>7} {'node_MB':>8} {'rank_MB':>8} {'exposed_ms':>10}")
    for dim, (crosses, node, rank) in link_bytes(a).items():
        print(f"{dim:>4} {str(crosses):>7} {node / 1e6:8.2f} {rank / 1e6:8.2f} {exposed[dim] * 1e3:10.1f}")
    print(f"step {step * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
