#pragma once

#include <torch/torch.h>

namespace fulgur::metrics {

/// Fraction of rows of `logits` ([N, C]) whose `target` class is among the
/// top_k scores. Returns a float32 scalar on the logits' device (no sync).
torch::Tensor accuracy(const torch::Tensor& logits, const torch::Tensor& target, int64_t top_k = 1);

}  // namespace fulgur::metrics
