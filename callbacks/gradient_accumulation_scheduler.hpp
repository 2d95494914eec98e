#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <map>

namespace fulgur {

/// Epoch -> batches accumulated per optimizer step from that epoch on.
using AccumulationSchedule = std::map<int64_t, int64_t>;

/// Options of GradientAccumulationScheduler, with Lightning's name.
#define FULGUR_GRADIENT_ACCUMULATION_SCHEDULER_OPTIONS(X)                                                       \
  X(AccumulationSchedule, scheduling, {}, "epoch -> batches accumulated from that epoch on, e.g. {0: 8, 4: 1}", \
    &GradientAccumulationSchedulerOptions::check_scheduling)

struct GradientAccumulationSchedulerOptions {
  GradientAccumulationSchedulerOptions() = default;
  explicit GradientAccumulationSchedulerOptions(AccumulationSchedule scheduling)
      : scheduling_(std::move(scheduling)) {}
  FULGUR_OPTIONS(GradientAccumulationSchedulerOptions, FULGUR_GRADIENT_ACCUMULATION_SCHEDULER_OPTIONS)
  /// The check of `scheduling`: not empty, epochs >= 0, factors >= 1.
  static check::Result check_scheduling(const AccumulationSchedule& scheduling);
};

/// Changes the number of batches accumulated per optimizer step by epoch:
/// `{0: 8, 4: 4, 8: 1}` accumulates 8 batches in epochs 0-3, 4 in epochs
/// 4-7 and 1 from epoch 8 on. Epochs before the first key use 1. Replaces
/// the accumulate_grad_batches option, which must stay at 1.
class GradientAccumulationScheduler : public Callback {
 public:
  using Options = GradientAccumulationSchedulerOptions;
  explicit GradientAccumulationScheduler(GradientAccumulationSchedulerOptions options);
  explicit GradientAccumulationScheduler(AccumulationSchedule scheduling)
      : GradientAccumulationScheduler(GradientAccumulationSchedulerOptions(std::move(scheduling))) {}

  std::string state_key() const override { return "GradientAccumulationScheduler"; }

  void on_train_start(Trainer& trainer, LightningModule&) override;
  void on_train_epoch_start(Trainer& trainer, LightningModule&) override;

  /// Batches accumulated in `epoch`.
  int64_t factor_for(int64_t epoch) const;
  const GradientAccumulationSchedulerOptions& options() const { return options_; }

 private:
  GradientAccumulationSchedulerOptions options_;
};

}  // namespace fulgur
