#pragma once

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace fulgur {

/// A forward to run without keeping its activations: tensors in, tensors out.
using CheckpointedForward = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>&)>;

/// Activation checkpointing (torch.utils.checkpoint, which LibTorch lacks):
/// runs `forward` on `inputs` without recording its graph, keeping only
/// `inputs`; during backward it runs `forward` again with the graph and
/// back-propagates through that. Activation memory falls from every
/// intermediate tensor of `forward` to its inputs, for one more forward per
/// backward. `parameters` are the ones `forward` uses: their gradients leave
/// through this node, so gradient hooks (ddp, horovod, fsdp) see them as
/// usual. The recomputation sees the random generators (CPU, and CUDA where
/// inputs are on a GPU) and the autocast state of the first run, so dropout
/// draws the same masks and the gradients equal those of a plain run.
/// Without grad mode (evaluation) it is `forward(inputs)`.
std::vector<torch::Tensor> checkpoint(const CheckpointedForward& forward, const std::vector<torch::Tensor>& inputs,
                                      const std::vector<torch::Tensor>& parameters);

}  // namespace fulgur
