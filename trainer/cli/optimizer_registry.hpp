#pragma once

#include <fulgur/trainer/cli/class_registry.hpp>

#include <torch/optim.h>

#include <functional>
#include <memory>
#include <vector>

namespace fulgur::cli {

/// What an `optimizer:` entry builds once fit has the module's parameters.
struct OptimizerRecipe {
  std::function<std::shared_ptr<torch::optim::Optimizer>(const std::vector<torch::Tensor>& parameters)> make;
};

/// LightningCLI's `optimizer:` section over LibTorch's optimizers:
///
///   optimizer:
///     class_path: SGD            # or torch.optim.SGD; on the command line --optimizer SGD
///     init_args: {lr: 0.05, momentum: 0.9}   # --optimizer.lr 0.05
///
/// SGD, Adam, AdamW, RMSprop and Adagrad, with PyTorch's argument names and
/// defaults. A program adds its own with add(name, factory).
class OptimizerRegistry : public ClassRegistry<OptimizerRecipe> {
 public:
  OptimizerRegistry() : ClassRegistry("optimizer") {}
  static OptimizerRegistry with_builtins();
};

}  // namespace fulgur::cli
