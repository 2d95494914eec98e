#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/log_options.hpp>
#include <fulgur/modules/metric_sink.hpp>
#include <fulgur/modules/optimizer_config.hpp>

#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>

namespace fulgur {

class Trainer;

/// The model and everything about how it trains, in one torch::nn::Module:
/// the steps of each loop, the optimizer, and hooks the Trainer calls at
/// fixed points. Override what you need; only training_step and
/// configure_optimizers are required for fit().
class LightningModule : public torch::nn::Module {
 public:
  ~LightningModule() override = default;

  // --- steps -------------------------------------------------------------------
  /// Returns the loss to minimise for one batch.
  virtual torch::Tensor training_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual void validation_step(const Batch& batch, int64_t batch_idx);
  virtual void test_step(const Batch& batch, int64_t batch_idx);
  /// Default: forward-free; override to return predictions for a batch.
  virtual torch::Tensor predict_step(const Batch& batch, int64_t batch_idx);
  virtual OptimizerConfig configure_optimizers() = 0;

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
  virtual void on_test_batch_start(const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_test_batch_end(const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_before_backward(const torch::Tensor& /*loss*/) {}
  virtual void on_after_backward() {}
  virtual void on_before_optimizer_step(torch::optim::Optimizer&) {}

  /// Floating-point operations of one training batch (forward and backward),
  /// for ThroughputMonitor's flops_per_sec and mfu (Lightning's
  /// `flops_per_batch` attribute); nullopt: not known.
  virtual std::optional<double> flops_per_batch() const { return std::nullopt; }

  // --- logging -------------------------------------------------------------------
  /// Records a scalar for the loggers and the progress bar. Only valid inside
  /// a step or hook while a Trainer runs this module.
  void log(const std::string& name, const torch::Tensor& value, const LogOptions& options = {});
  void log(const std::string& name, double value, const LogOptions& options = {});

  /// Hyper-parameters written to the run folder's hparams.yaml.
  void save_hyperparameters(const YAML::Node& hparams) { hparams_ = YAML::Clone(hparams); }
  const YAML::Node& hparams() const { return hparams_; }

  /// The Trainer running this module, or nullptr outside a run.
  Trainer* trainer() const { return trainer_; }

 private:
  friend class Trainer;
  Trainer* trainer_ = nullptr;
  MetricSink* results_ = nullptr;
  YAML::Node hparams_{YAML::NodeType::Map};
};

}  // namespace fulgur
