#pragma once

#include <torch/torch.h>

#include <concepts>
#include <map>
#include <string>

namespace fulgur {

/// One sample of a Dataset: its input tensor, its target, and any named
/// tensors a model needs beside them (collated into Batch::tensors).
///
/// The target is a tensor of any dtype and shape: a class index (a 0-d
/// int64 tensor, written class_index(3)), a float for regression
/// (torch::tensor(0.7)), a mask for segmentation, a multi-label vector.
/// The default collation stacks, so every sample's tensors of one name need
/// the same shape; variable lengths need a collate (see pad_sequences).
struct Example {
  torch::Tensor input;
  torch::Tensor target;
  std::map<std::string, torch::Tensor> tensors;
};

/// A class index as a target: a 0-d int64 tensor. Only integers are taken,
/// so a float never turns silently into a class.
template <std::integral T>
  requires(!std::same_as<T, bool>)
torch::Tensor class_index(T index) {
  return torch::scalar_tensor(static_cast<int64_t>(index), torch::kLong);
}

}  // namespace fulgur
