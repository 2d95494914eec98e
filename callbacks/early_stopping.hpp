#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/monitor_mode.hpp>

#include <optional>
#include <string>

namespace fulgur {

/// Options of EarlyStopping, with Lightning's names and defaults.
#define FULGUR_EARLY_STOPPING_OPTIONS(X)                                                                        \
  X(std::string, monitor, "", "name of the metric in trainer.state().callback_metrics()", fulgur::check::NotEmpty{})   \
  X(fulgur::MonitorMode, mode, fulgur::MonitorMode::Min, "min: lower is better; max: higher is better",       \
    fulgur::check::Any{})                                                                                       \
  X(int64_t, patience, 3, "checks without improvement before training stops", fulgur::check::AtLeast{0})        \
  X(double, min_delta, 0.0, "smallest change that counts as an improvement (its sign is ignored)",              \
    fulgur::check::Any{})                                                                                       \
  X(std::optional<double>, stopping_threshold, std::nullopt, "stop as soon as the metric is this good",         \
    fulgur::check::Any{})                                                                                       \
  X(std::optional<double>, divergence_threshold, std::nullopt, "stop as soon as the metric is worse than this", \
    fulgur::check::Any{})                                                                                       \
  X(bool, check_finite, true, "stop when the metric becomes NaN or infinite", fulgur::check::Any{})             \
  X(bool, strict, true, "a missing metric is an error (true) or skipped with a warning (false)",                \
    fulgur::check::Any{})                                                                                       \
  X(bool, verbose, false, "print a line on rank 0 at each improvement and at the stop", fulgur::check::Any{})   \
  X(std::optional<bool>, check_on_train_epoch_end, std::nullopt,                                                \
    "check at each training epoch end (true) or after each validation (false); null: at epoch end when "        \
    "validation runs once per epoch",                                                                           \
    fulgur::check::Any{})

struct EarlyStoppingOptions {
  EarlyStoppingOptions() = default;
  explicit EarlyStoppingOptions(std::string monitor) : monitor_(std::move(monitor)) {}
  FULGUR_OPTIONS(EarlyStoppingOptions, FULGUR_EARLY_STOPPING_OPTIONS)
};

/// Stops training when a monitored metric has stopped improving. The value
/// rank 0 sees is broadcast before every check, so all processes take the
/// same decision and stop after the same step.
///
///   auto stop = std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_loss").patience(2));
class EarlyStopping : public Callback {
 public:
  using Options = EarlyStoppingOptions;
  explicit EarlyStopping(EarlyStoppingOptions options);

  std::string state_key() const override;
  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;
  bool monitors_metrics() const override { return true; }

  void setup(Trainer& trainer, LightningModule&) override;
  void on_validation_end(Trainer& trainer, LightningModule&) override;
  void on_train_epoch_end(Trainer& trainer, LightningModule&) override;

  const EarlyStoppingOptions& options() const { return options_; }
  int64_t wait_count() const { return wait_count_; }
  double best_score() const { return best_score_; }
  /// Epoch in which this callback stopped training; 0 if it has not.
  int64_t stopped_epoch() const { return stopped_epoch_; }
  /// Why training was stopped (empty if it was not).
  const std::string& stopping_reason() const { return stopping_reason_; }

 private:
  bool improves(double current, double reference) const;
  void check(Trainer& trainer);
  /// Returns the reason to stop, or empty to go on; updates best/wait.
  /// `announce`: print the "New best score" line (rank 0 only).
  std::string evaluate(double current, bool announce);

  EarlyStoppingOptions options_;
  bool check_on_train_epoch_end_ = false;
  int64_t wait_count_ = 0;
  int64_t stopped_epoch_ = 0;
  double best_score_;
  std::string stopping_reason_;
  bool warned_missing_ = false;
};

}  // namespace fulgur
