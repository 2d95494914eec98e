#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>

namespace fulgur {

/// One sample of a Dataset: its input tensor, its class index, and any named
/// tensors a model needs beside them (collated into Batch::tensors). The
/// default collation stacks, so every sample's tensors of one name need the
/// same shape; variable lengths need a collate (see pad_sequences).
struct Example {
  torch::Tensor input;
  int64_t target = 0;
  std::map<std::string, torch::Tensor> tensors;
};

}  // namespace fulgur
