#pragma once

#include <fulgur/strategies/collectives/process_group.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <memory>

namespace fulgur {

// The collectives of tensor and sequence parallelism as differentiable
// functions (Megatron-LM's regions): each one's backward is the collective
// that makes the gradients right. `group` is the tensor-parallel group
// (DeviceMesh::group("tp")); every rank of it calls the same ones in the
// same order, with the same shapes.

/// Forward: identity. Backward: the gradients summed over `group`. Where a
/// replicated activation enters a column-split layer.
torch::Tensor copy_to_group(const torch::Tensor& input, ProcessGroup& group);
/// Forward: summed over `group`. Backward: identity. Where the partial
/// sums of a row-split layer leave it.
torch::Tensor reduce_from_group(const torch::Tensor& input, ProcessGroup& group);
/// Forward: this rank's chunk of `dim`. Backward: the chunks gathered.
torch::Tensor split_to_group(const torch::Tensor& input, int64_t dim, ProcessGroup& group);
/// Forward: the ranks' chunks concatenated along `dim`. Backward: this
/// rank's chunk of the (replicated) gradient.
torch::Tensor gather_from_group(const torch::Tensor& input, int64_t dim, ProcessGroup& group);
/// Sequence parallelism's entry: forward all-gathers the sequence chunks
/// along `dim`; backward reduce-scatters the gradient (partial on each rank).
torch::Tensor gather_sequence(const torch::Tensor& input, int64_t dim, ProcessGroup& group);
/// Sequence parallelism's exit: forward reduce-scatters the partial sums
/// along `dim` (each rank keeps its chunk, summed); backward all-gathers.
torch::Tensor reduce_scatter_sequence(const torch::Tensor& input, int64_t dim, ProcessGroup& group);

/// A column-split linear layer fed by sequence-parallel activations:
/// forward all-gathers `input` along `dim` and applies the layer; only this
/// rank's chunk is kept for backward, which gathers it again (so the whole
/// sequence's input never stays in memory between forward and backward) and
/// reduce-scatters the input's gradient. `bias` may be undefined.
torch::Tensor gathered_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                              int64_t dim, ProcessGroup& group);

/// Sums `param`'s gradient over `group` as backward produces it (a hook,
/// kept with the parameter, which keeps the group): for parameters that
/// stay whole on every rank but see only this rank's sequence chunk.
void sum_gradients_over_group(torch::Tensor& param, std::shared_ptr<ProcessGroup> group);

/// Cross-entropy of logits split over `group` along the vocabulary (the
/// last dimension; this rank holds classes [rank * V/n, (rank + 1) * V/n)),
/// without gathering them: the max, the sum of exponentials and the
/// target's logit are each one all-reduce of [tokens] values. `logits`:
/// [..., V/n]; `target`: [...] class indices (ignore_index counts for
/// nothing). Returns the mean over the counted targets, as
/// torch::nn::functional::cross_entropy on the whole logits does.
torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, ProcessGroup& group,
                                           int64_t ignore_index = -100);

}  // namespace fulgur
