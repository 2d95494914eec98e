#pragma once

#include <torch/optim.h>

#include <cstddef>
#include <memory>

namespace fulgur {

class ModuleRuntime;

/// One of the module's optimizers as manual optimization uses it
/// (Lightning's LightningOptimizer): step() goes through the Trainer (the
/// precision plugin's gradient scaler, on_before_optimizer_step, the
/// global_step count); everything else is the torch optimizer's.
///
///   auto opt = optimizers()[0];
///   opt->zero_grad();
///   manual_backward(loss);
///   opt->step();
class LightningOptimizer {
 public:
  LightningOptimizer(std::shared_ptr<torch::optim::Optimizer> optimizer, size_t index, ModuleRuntime* runtime)
      : optimizer_(std::move(optimizer)), index_(index), runtime_(runtime) {}

  void step();
  void zero_grad(bool set_to_none = true) { optimizer_->zero_grad(set_to_none); }
  std::vector<torch::optim::OptimizerParamGroup>& param_groups() { return optimizer_->param_groups(); }
  /// The torch optimizer (its state, its options).
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  /// Its position in configure_optimizers' list.
  size_t index() const { return index_; }

 private:
  std::shared_ptr<torch::optim::Optimizer> optimizer_;
  size_t index_;
  ModuleRuntime* runtime_;
};

}  // namespace fulgur
