#pragma once

#include <fulgur/core/option_enum.hpp>

#include <torch/torch.h>

#include <string>
#include <vector>

namespace fulgur {

/// How gradients are clipped: their total norm bounded, or each element clamped.
enum class ClipAlgorithm { Norm, Value };

inline std::vector<std::string> option_choices(ClipAlgorithm) { return {"norm", "value"}; }

/// Clips the gradients of every parameter `optimizer` updates. Gradients must
/// already be synchronised and unscaled, so the norm is the global one.
inline void clip_optimizer_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  std::vector<torch::Tensor> params;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) params.push_back(p);
  }
  if (algorithm == ClipAlgorithm::Norm) {
    torch::nn::utils::clip_grad_norm_(params, value);
  } else {
    torch::nn::utils::clip_grad_value_(params, value);
  }
}

}  // namespace fulgur
