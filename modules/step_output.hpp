#pragma once

#include <torch/torch.h>

#include <map>
#include <string>
#include <utility>

namespace fulgur {

/// What a validation or test step returns for the callbacks' batch-end
/// hooks (Lightning's `outputs`): nothing, a tensor, or named tensors.
///
///   return logits;                                   // a tensor
///   return fulgur::StepOutput({{"logits", logits}, {"loss", loss}});  // named
struct StepOutput {
  StepOutput() = default;
  StepOutput(torch::Tensor value) : tensor(std::move(value)) {}  // NOLINT: implicit, as a return value
  StepOutput(std::map<std::string, torch::Tensor> values) : named(std::move(values)) {}  // NOLINT

  torch::Tensor tensor;                        // undefined when the step returned none
  std::map<std::string, torch::Tensor> named;  // empty unless the step returned named tensors

  bool empty() const { return !tensor.defined() && named.empty(); }
};

}  // namespace fulgur
