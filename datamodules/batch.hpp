#pragma once

#include <torch/torch.h>

namespace fulgur {

/// One batch as the steps see it: an input tensor whose first dimension is
/// the batch size, and the matching targets.
struct Batch {
  torch::Tensor input;
  torch::Tensor target;

  int64_t size() const { return input.defined() ? input.size(0) : 0; }

  /// Moves both tensors; non_blocking only matters for pinned CPU -> CUDA copies.
  Batch to(const torch::Device& device, bool non_blocking = false) const {
    return {input.to(device, non_blocking), target.defined() ? target.to(device, non_blocking) : target};
  }
};

}  // namespace fulgur
