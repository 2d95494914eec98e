#pragma once

#include <fulgur/modules/module_runtime.hpp>
#include <fulgur/modules/optimizer_config.hpp>

#include <memory>
#include <vector>

namespace fulgur {

class Trainer;
class RunContext;

/// The Trainer's side of ModuleRuntime: what a module reaches through
/// device(), all_gather(), manual_backward(), optimizers() and friends. It
/// holds the optimizers configure_optimizers returned for the running fit.
class ModuleRuntimeConnector final : public ModuleRuntime {
 public:
  /// `trainer` is only what the module's trainer() returns; the rest comes
  /// from `context`, whose step counter a manual step advances.
  ModuleRuntimeConnector(Trainer& trainer, RunContext& context);

  /// Takes configure_optimizers' result: checks it against the module's
  /// optimization mode and the Trainer's options, then hands every
  /// optimizer to the strategy (Horovod broadcasts its state).
  void set_optimizers(const OptimizerConfig& config);
  /// Manual optimization steps in training_step, so the Trainer cannot
  /// accumulate for it: throws for any accumulate_grad_batches but 1.
  static void check_manual_accumulation(int64_t accumulate_grad_batches);
  /// Drops the optimizers (a stage other than fit, or a new fit).
  void clear_optimizers();
  std::vector<OptimizerConfig>& optimizer_configs() { return configs_; }

  Trainer* trainer() override { return &trainer_; }
  torch::Device device() const override;
  int64_t global_rank() const override;
  int64_t world_size() const override;
  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  std::vector<std::shared_ptr<LightningOptimizer>> optimizers() override;
  std::vector<std::shared_ptr<torch::optim::LRScheduler>> lr_schedulers() override;
  void manual_backward(const torch::Tensor& loss) override;
  void optimizer_step(size_t index) override;
  void clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) override;

 private:
  Trainer& trainer_;
  RunContext& context_;
  std::vector<OptimizerConfig> configs_;
  std::vector<std::shared_ptr<LightningOptimizer>> optimizers_;
};

}  // namespace fulgur
