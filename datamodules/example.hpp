#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace fulgur {

/// One sample of a classification Dataset: its input tensor (any shape, the
/// same for every sample so batches can be stacked) and its class index.
struct Example {
  torch::Tensor input;
  int64_t target = 0;
};

}  // namespace fulgur
