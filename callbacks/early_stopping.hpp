#pragma once

#include <fulgur/trainer/callback.hpp>

#include <torch/arg.h>

#include <optional>
#include <string>

namespace fulgur {

namespace cli {
class ConfigSection;
}

/// Options of EarlyStopping, with Lightning's names and defaults.
struct EarlyStoppingOptions {
  explicit EarlyStoppingOptions(std::string monitor) : monitor_(std::move(monitor)) {}
  /// Name of the metric in Trainer::callback_metrics().
  TORCH_ARG(std::string, monitor);
  /// "min": lower is better; "max": higher is better.
  TORCH_ARG(std::string, mode) = "min";
  /// Checks without improvement before training stops.
  TORCH_ARG(int64_t, patience) = 3;
  /// Smallest change that counts as an improvement (its sign is ignored).
  TORCH_ARG(double, min_delta) = 0.0;
  /// Stop as soon as the metric is this good.
  TORCH_ARG(std::optional<double>, stopping_threshold) = std::nullopt;
  /// Stop as soon as the metric is worse than this.
  TORCH_ARG(std::optional<double>, divergence_threshold) = std::nullopt;
  /// Stop when the metric becomes NaN or infinite.
  TORCH_ARG(bool, check_finite) = true;
  /// A missing metric is an error (true) or skipped with a warning (false).
  TORCH_ARG(bool, strict) = true;
  /// Print a line on rank 0 at each improvement and at the stop.
  TORCH_ARG(bool, verbose) = false;
  /// Check at the end of each training epoch (true) or after each validation
  /// (false); unset: at epoch end when validation runs once per epoch.
  TORCH_ARG(std::optional<bool>, check_on_train_epoch_end) = std::nullopt;
};

/// Stops training when a monitored metric has stopped improving. The value
/// rank 0 sees is broadcast before every check, so all processes take the
/// same decision and stop after the same step.
///
///   auto stop = std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_loss").patience(2));
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  /// Reads the options from a `trainer.callbacks` entry's init_args.
  static std::shared_ptr<Callback> from_config(cli::ConfigSection& section);

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
  std::string evaluate(double current);

  EarlyStoppingOptions options_;
  bool check_on_train_epoch_end_ = false;
  int64_t wait_count_ = 0;
  int64_t stopped_epoch_ = 0;
  double best_score_;
  std::string stopping_reason_;
  bool warned_missing_ = false;
};

}  // namespace fulgur
