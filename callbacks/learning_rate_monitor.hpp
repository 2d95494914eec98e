#pragma once

#include <fulgur/trainer/callback.hpp>

#include <torch/arg.h>

#include <map>
#include <optional>
#include <string>

namespace fulgur {

namespace cli {
class ConfigSection;
}

/// Options of LearningRateMonitor, with Lightning's names.
struct LearningRateMonitorOptions {
  /// "step", "epoch", or unset: the LR scheduler's interval ("epoch" without a scheduler).
  TORCH_ARG(std::optional<std::string>, logging_interval) = std::nullopt;
  /// Also log the momentum (SGD's momentum, Adam's beta1, RMSprop's momentum).
  TORCH_ARG(bool, log_momentum) = false;
  /// Also log the weight decay.
  TORCH_ARG(bool, log_weight_decay) = false;
};

/// Logs the learning rate of every parameter group to the loggers as
/// `lr-<Optimizer>` (one group) or `lr-<Optimizer>/pg<i>` (several, from 1),
/// and optionally `...-momentum` and `...-weight_decay`. Step interval logs
/// every log_every_n_steps optimizer steps, epoch interval once per epoch.
class LearningRateMonitor : public Callback {
 public:
  explicit LearningRateMonitor(LearningRateMonitorOptions options = {});
  static std::shared_ptr<Callback> from_config(cli::ConfigSection& section);

  std::string state_key() const override { return "LearningRateMonitor"; }

  void on_train_start(Trainer& trainer, LightningModule&) override;
  void on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) override;
  void on_train_epoch_start(Trainer& trainer, LightningModule&) override;

  /// The values as they would be logged now.
  std::map<std::string, double> extract(Trainer& trainer) const;
  /// Short name of an optimizer ("SGD", "Adam", ...).
  static std::string optimizer_name(const torch::optim::Optimizer& optimizer);

 private:
  void log(Trainer& trainer);

  LearningRateMonitorOptions options_;
  std::string interval_;  // resolved at train start
  int64_t last_logged_step_ = -1;
};

}  // namespace fulgur
