#pragma once

#include <fulgur/modules/interval.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// Options of LearningRateMonitor, with Lightning's names.
#define FULGUR_LEARNING_RATE_MONITOR_OPTIONS(X)                                                            \
  X(std::optional<fulgur::Interval>, logging_interval, std::nullopt,                                        \
    "step, epoch, or null: the LR scheduler's interval (epoch without a scheduler)", fulgur::check::Any{})  \
  X(bool, log_momentum, false, "also log the momentum (SGD's momentum, Adam's beta1, RMSprop's momentum)", \
    fulgur::check::Any{})                                                                                  \
  X(bool, log_weight_decay, false, "also log the weight decay", fulgur::check::Any{})

struct LearningRateMonitorOptions {
  FULGUR_OPTIONS(LearningRateMonitorOptions, FULGUR_LEARNING_RATE_MONITOR_OPTIONS)
};

/// Logs the learning rate of every parameter group to the loggers as
/// `lr-<Optimizer>` (one group) or `lr-<Optimizer>/pg<i>` (several, from 1),
/// and optionally `...-momentum` and `...-weight_decay`. Step interval logs
/// every log_every_n_steps optimizer steps, epoch interval once per epoch.
class LearningRateMonitor : public Callback {
 public:
  using Options = LearningRateMonitorOptions;
  explicit LearningRateMonitor(LearningRateMonitorOptions options = {});

  std::string state_key() const override { return "LearningRateMonitor"; }

  void on_train_start(Trainer& trainer, LightningModule&) override;
  void on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) override;
  void on_train_epoch_start(Trainer& trainer, LightningModule&) override;

  /// The values as they would be logged now.
  std::map<std::string, double> extract(Trainer& trainer) const;
  /// Short name of an optimizer ("SGD", "Adam", ...).
  static std::string optimizer_name(const torch::optim::Optimizer& optimizer);
  const LearningRateMonitorOptions& options() const { return options_; }

 private:
  void log(Trainer& trainer);

  LearningRateMonitorOptions options_;
  Interval interval_ = Interval::Epoch;  // resolved at train start
  int64_t last_logged_step_ = -1;
};

}  // namespace fulgur
