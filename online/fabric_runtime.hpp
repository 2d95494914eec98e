#pragma once

#include <fulgur/modules/metric_sink.hpp>
#include <fulgur/modules/module_runtime.hpp>
#include <fulgur/engine/step_engine.hpp>

#include <map>
#include <string>

namespace fulgur {

class Fabric;

/// What a LightningModule set up by a Fabric sees of its run: the Fabric's
/// strategy for device, rank and collectives, its optimizers, and log()
/// values kept until the Fabric's next optimizer step sends them to its
/// loggers.
class FabricRuntime : public ModuleRuntime, public MetricSink, public StepEngine::Hooks {
 public:
  explicit FabricRuntime(Fabric& fabric) : fabric_(fabric) {}

  // --- ModuleRuntime ------------------------------------------------------------
  Trainer* trainer() override { return nullptr; }
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

  // StepEngine::Hooks: a Fabric has no callbacks, so the module's hooks alone.
  void before_backward(const torch::Tensor& loss) override;
  void after_backward() override;
  void before_optimizer_step(torch::optim::Optimizer& optimizer) override;

  // --- MetricSink -----------------------------------------------------------------
  /// Kept as the latest value under `name` (averaged over ranks with sync_dist).
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options) override;
  /// Metric objects need epochs, which a Fabric has not: std::logic_error.
  void log(const std::string& name, metrics::Metric& metric, const LogOptions& options) override;

  /// The values logged since the last call.
  std::map<std::string, double> take_logged();

 private:
  Fabric& fabric_;
  std::map<std::string, double> logged_;
};

}  // namespace fulgur
