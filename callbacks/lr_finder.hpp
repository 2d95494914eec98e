#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// How the range test's learning rate grows from min_lr to max_lr.
enum class LRFinderMode { Exponential, Linear };
inline std::vector<std::string> option_choices(LRFinderMode) { return {"exponential", "linear"}; }

/// Options of the learning-rate range test, with Lightning's names and
/// defaults (LearningRateFinder, Tuner.lr_find).
#define FULGUR_LR_FINDER_OPTIONS(X)                                                                              \
  X(double, min_lr, 1e-8, "learning rate of the first step", fulgur::check::Positive{})                          \
  X(double, max_lr, 1.0, "learning rate of the last step", fulgur::check::Positive{})                            \
  X(int64_t, num_training_steps, 100, "optimizer steps of the sweep", fulgur::check::AtLeast{2})                 \
  X(fulgur::LRFinderMode, mode, fulgur::LRFinderMode::Exponential,                                              \
    "exponential or linear: how the learning rate grows between the two", fulgur::check::Any{})                  \
  X(std::optional<double>, early_stop_threshold, 4.0,                                                            \
    "stop once the smoothed loss exceeds this many times its best; null: run every step",                        \
    fulgur::check::Positive{})

struct LRFinderOptions {
  FULGUR_OPTIONS(LRFinderOptions, FULGUR_LR_FINDER_OPTIONS)
};

/// The learning-rate range test as a callback (Lightning's
/// LearningRateFinder; Tuner::lr_find runs it): before each optimizer step
/// it sets every parameter group's learning rate along the sweep from
/// min_lr to max_lr, records the loss (smoothed exponentially, beta 0.98,
/// bias-corrected, as Lightning), and stops training once the smoothed
/// loss exceeds early_stop_threshold times the best seen.
class LRFinder : public Callback {
 public:
  using Options = LRFinderOptions;
  explicit LRFinder(LRFinderOptions options = {});

  std::string state_key() const override { return "LRFinder"; }
  void on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) override;
  void on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor& loss, const Batch&,
                          int64_t) override;

  /// The learning rate of sweep step `step` (from 0).
  double learning_rate(int64_t step) const;
  /// Each step's learning rate and smoothed loss, in order.
  const std::vector<double>& lrs() const { return lrs_; }
  const std::vector<double>& losses() const { return losses_; }
  /// The learning rate at the steepest descent of the loss curve (the
  /// smallest np.gradient of the losses, leaving out the first `skip_begin`
  /// and the last `skip_end` points and non-finite ones), as Lightning's
  /// suggestion(); nullopt when fewer than two points remain.
  std::optional<double> suggestion(int64_t skip_begin = 10, int64_t skip_end = 1) const;
  /// Writes `lr,loss` rows to `path` (creating its folder).
  void write_csv(const std::filesystem::path& path) const;

  const LRFinderOptions& options() const { return options_; }

 private:
  LRFinderOptions options_;
  std::vector<double> lrs_;
  std::vector<double> losses_;
  double average_loss_ = 0.0;
  double best_loss_ = 0.0;
  int64_t recorded_step_ = 0;  // global_step at the last recorded loss
};

}  // namespace fulgur
