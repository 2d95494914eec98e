#pragma once

#include <ATen/core/Dict.h>
#include <torch/nn/module.h>
#include <torch/optim.h>

#include <functional>
#include <string>
#include <vector>

namespace fulgur {

/// An optimizer's state in PyTorch's `optimizer.state_dict()` layout:
/// `{"state": {index: {...}}, "param_groups": [{"lr": ..., "params": [index, ...]}, ...]}`
/// with parameters numbered across groups in order. Per-parameter state uses
/// PyTorch's names: SGD `momentum_buffer`; Adam/AdamW `step`, `exp_avg`,
/// `exp_avg_sq`, `max_exp_avg_sq`; RMSprop `step`, `square_avg`,
/// `momentum_buffer`, `grad_avg`; Adagrad `step`, `sum`. Other optimizers
/// throw std::invalid_argument naming the type.
c10::impl::GenericDict optimizer_state_dict(const torch::optim::Optimizer& optimizer);

/// An optimizer's parameters in the numbering of optimizer_state_dict().
std::vector<torch::Tensor> indexed_parameters(const torch::optim::Optimizer& optimizer);

/// The names `module` gives the optimizer's parameters, in that numbering;
/// throws std::invalid_argument for a tensor the module does not hold.
std::vector<std::string> indexed_parameter_names(const torch::nn::Module& module,
                                                 const torch::optim::Optimizer& optimizer);

/// Restores what optimizer_state_dict() produced into an optimizer of the
/// same type over parameters of the same shapes; throws
/// std::invalid_argument naming what does not match. `state_like` (when
/// given) returns, for a parameter, a tensor shaped like the state this
/// process keeps for it: a sharding strategy's rows of the parameter.
void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, const c10::impl::GenericDict& state,
                               const std::function<torch::Tensor(const torch::Tensor&)>& state_like = nullptr);

}  // namespace fulgur
