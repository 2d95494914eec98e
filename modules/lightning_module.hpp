#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/clip_algorithm.hpp>
#include <fulgur/modules/hyperparameters.hpp>
#include <fulgur/modules/lightning_optimizer.hpp>
#include <fulgur/modules/log_options.hpp>
#include <fulgur/modules/metric_sink.hpp>
#include <fulgur/modules/metrics/metric.hpp>
#include <fulgur/modules/module_runtime.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/modules/reduce_op.hpp>
#include <fulgur/modules/step_output.hpp>

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class Trainer;
class DeviceMesh;
namespace metrics {
class MetricCollection;
}

/// The model and everything about how it trains, in one torch::nn::Module:
/// the steps of each loop, the optimizer, and hooks the Trainer calls at
/// fixed points. Override what you need; only training_step and
/// configure_optimizers are required for fit().
class LightningModule : public torch::nn::Module {
 public:
  ~LightningModule() override = default;

  // --- steps -------------------------------------------------------------------
  /// Returns the loss to minimise for one batch. With manual optimization
  /// the step does its own backward and optimizer steps, and what it
  /// returns (may be undefined) is only passed to on_train_batch_end.
  virtual torch::Tensor training_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual void validation_step(const Batch& batch, int64_t batch_idx);
  virtual void test_step(const Batch& batch, int64_t batch_idx);
  /// The steps the Trainer calls: also the index of the batch's loader (with
  /// several, DataModule::val_dataloaders), and what they return reaches the
  /// callbacks' on_validation_batch_end / on_test_batch_end as `outputs`.
  /// By default they call the two-argument steps and return nothing, so
  /// override whichever you need.
  virtual StepOutput validation_step(const Batch& batch, int64_t batch_idx, int64_t dataloader_idx);
  virtual StepOutput test_step(const Batch& batch, int64_t batch_idx, int64_t dataloader_idx);
  /// With the index of the batch's predict loader; by default the two-argument predict_step.
  virtual torch::Tensor predict_step(const Batch& batch, int64_t batch_idx, int64_t dataloader_idx);
  /// Default: forward-free; override to return predictions for a batch.
  virtual torch::Tensor predict_step(const Batch& batch, int64_t batch_idx);
  /// One optimizer (and scheduler), or several with OptimizerConfig::list
  /// for manual optimization. Called by fit() after the strategy set the
  /// module up, on this process's device.
  virtual OptimizerConfig configure_optimizers() = 0;
  /// Lightning's configure_model: called once per module by its first run,
  /// after the processes met and before the strategy sets the module up and
  /// the optimizers are made, with the run's device mesh (every dimension
  /// of size 1 outside strategy model_parallel). Split the model here
  /// (parallelize_module in strategies/model_parallel/); the default does nothing.
  virtual void configure_model(DeviceMesh& /*mesh*/) {}
  /// Replaces configure_optimizers for fit, as LightningCLI's optimizer: and
  /// lr_scheduler: sections do (the command line calls this).
  void override_configure_optimizers(std::function<OptimizerConfig(LightningModule&)> configure) {
    configure_override_ = std::move(configure);
  }
  /// What fit uses: the override if one was set, else configure_optimizers().
  OptimizerConfig resolved_optimizers() {
    return configure_override_ ? configure_override_(*this) : configure_optimizers();
  }

  // --- hooks (called after the callbacks' hooks of the same name) -------------
  virtual void on_fit_start() {}
  virtual void on_fit_end() {}
  virtual void on_train_start() {}
  virtual void on_train_end() {}
  virtual void on_validation_start() {}
  virtual void on_validation_end() {}
  virtual void on_test_start() {}
  virtual void on_test_end() {}
  virtual void on_predict_start() {}
  virtual void on_predict_end() {}
  virtual void on_train_epoch_start() {}
  virtual void on_train_epoch_end() {}
  virtual void on_validation_epoch_start() {}
  virtual void on_validation_epoch_end() {}
  virtual void on_test_epoch_start() {}
  virtual void on_test_epoch_end() {}
  virtual void on_train_batch_start(const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_train_batch_end(const torch::Tensor& /*loss*/, const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_validation_batch_start(const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_validation_batch_end(const Batch&, int64_t /*batch_idx*/) {}
  /// With the step's outputs and its loader's index; by default the overload above.
  virtual void on_validation_batch_end(const StepOutput& /*outputs*/, const Batch& batch, int64_t batch_idx,
                                       int64_t /*dataloader_idx*/) {
    on_validation_batch_end(batch, batch_idx);
  }
  virtual void on_test_batch_start(const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_test_batch_end(const Batch&, int64_t /*batch_idx*/) {}
  /// With the step's outputs and its loader's index; by default the overload above.
  virtual void on_test_batch_end(const StepOutput& /*outputs*/, const Batch& batch, int64_t batch_idx,
                                 int64_t /*dataloader_idx*/) {
    on_test_batch_end(batch, batch_idx);
  }
  virtual void on_before_backward(const torch::Tensor& /*loss*/) {}
  virtual void on_after_backward() {}
  virtual void on_before_optimizer_step(torch::optim::Optimizer&) {}

  /// Floating-point operations of one training batch (forward and backward),
  /// for ThroughputMonitor's flops_per_sec and mfu (Lightning's
  /// `flops_per_batch` attribute); nullopt: not known.
  virtual std::optional<double> flops_per_batch() const { return std::nullopt; }

  // --- manual optimization (Lightning's names) ---------------------------------
  /// false: training_step runs backward and the optimizer steps itself,
  /// through manual_backward() and optimizers(); the Trainer then does no
  /// backward, step or zero_grad, and global_step counts optimizer steps.
  /// Set it in the constructor.
  void automatic_optimization(bool automatic) { automatic_optimization_ = automatic; }
  bool automatic_optimization() const { return automatic_optimization_; }
  /// The optimizers configure_optimizers returned, in order (inside fit).
  std::vector<std::shared_ptr<LightningOptimizer>> optimizers() const;
  /// Their LRScheduler schedulers, in order; manual optimization steps them
  /// itself. A ReduceLROnPlateauScheduler is not an LRScheduler: the Trainer
  /// steps it with its monitor (LRSchedulerConfig::plateau).
  std::vector<std::shared_ptr<torch::optim::LRScheduler>> lr_schedulers() const;
  /// Backward with the precision plugin's loss scaling; under ddp and
  /// horovod the gradients are then averaged over the processes, so the
  /// replicas stay identical. Calls on_before_backward / on_after_backward.
  void manual_backward(const torch::Tensor& loss);
  /// Only optimizer `index`'s parameters require grad until untoggle_optimizer:
  /// the other optimizers' parameters are switched off (a GAN's generator
  /// step leaves the discriminator without gradients).
  void toggle_optimizer(size_t index);
  void toggle_optimizer(const LightningOptimizer& optimizer) { toggle_optimizer(optimizer.index()); }
  /// Restores what toggle_optimizer switched off.
  void untoggle_optimizer(size_t index);
  void untoggle_optimizer(const LightningOptimizer& optimizer) { untoggle_optimizer(optimizer.index()); }
  /// Clips `optimizer`'s gradients (unscaled first under 16-mixed); the
  /// manual counterpart of the gradient_clip_val option.
  void clip_gradients(LightningOptimizer& optimizer, double value, ClipAlgorithm algorithm = ClipAlgorithm::Norm);

  // --- the run this module is part of ----------------------------------------------
  /// Where the module's parameters live (the strategy's device inside a run).
  torch::Device device() const;
  /// This process's rank and the number of processes (0 and 1 outside a
  /// run). Under strategy model_parallel world_size() and the collectives
  /// below count the data-parallel replicas (the mesh's dp), the processes
  /// that hold different data.
  int64_t global_rank() const;
  int64_t world_size() const;
  /// `tensor` from every process stacked along a new first dimension
  /// ([world_size, ...]); every process must call it with the same shape.
  torch::Tensor all_gather(const torch::Tensor& tensor);
  /// `tensor` reduced over every process (a copy); every process must call it.
  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum);

  // --- logging -------------------------------------------------------------------
  /// Records a scalar for the loggers and the progress bar. Valid inside
  /// every step and hook while a Trainer runs this module, epoch-end hooks
  /// included (log an epoch value computed from states summed over ranks
  /// in on_validation_epoch_end).
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options = {});
  void log(const std::string& name, double value, const LogOptions& options = {});
  /// Logs a Metric object (torchmetrics' `self.log("val_f1", self.f1)`):
  /// on_step the value of the batch its forward() just saw, on_epoch its
  /// compute() at the epoch's end, synchronised over every process by the
  /// metric itself (sync_dist and reduce do not apply), then reset().
  /// The metric must outlive the epoch (a registered child module).
  void log(const std::string& name, metrics::Metric& metric, const LogOptions& options = {});
  /// Logs every member of a MetricCollection as a metric object under its
  /// full name (prefix included), Lightning's `self.log_dict(collection)`.
  void log_dict(metrics::MetricCollection& collection, const LogOptions& options = {});

  /// Hyper-parameters for the run folder's hparams.yaml and the
  /// checkpoint's hyper_parameters: an options struct (FULGUR_OPTIONS),
  /// a flat map of scalars and strings, or HParams (the CLI records the
  /// resolved configuration this way).
  template <DeclaredOptions Options>
  void save_hyperparameters(const Options& options) {
    hparams_ = to_hparams(options);
  }
  void save_hyperparameters(const std::map<std::string, HParamValue>& values) { hparams_ = to_hparams(values); }
  void save_hyperparameters(const HParams& hparams) { hparams_ = hparams.copy(); }
  const HParams& hparams() const { return hparams_; }

  /// The Trainer running this module, or nullptr outside a run.
  Trainer* trainer() const;

 private:
  friend class ScopedMetricSink;
  friend class ScopedModuleRuntime;
  ModuleRuntime& runtime(const char* method) const;
  /// Sets the runtime of the module and of every Metric among its children.
  void attach_runtime(ModuleRuntime* runtime);

  MetricSink* results_ = nullptr;
  ModuleRuntime* runtime_ = nullptr;
  HParams hparams_ = empty_hparams();
  bool automatic_optimization_ = true;
  std::function<OptimizerConfig(LightningModule&)> configure_override_;
  /// What toggle_optimizer switched off: parameter -> its requires_grad before.
  std::vector<std::pair<torch::Tensor, bool>> toggled_;
};

}  // namespace fulgur
