#pragma once

#include <fulgur/callbacks/timer_duration.hpp>
#include <fulgur/modules/interval.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/loops/running_stage.hpp>
#include <fulgur/trainer/callback.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace fulgur {

/// Options of Timer, with Lightning's names.
#define FULGUR_TIMER_OPTIONS(X)                                                                               \
  X(std::optional<TimerDuration>, duration, std::nullopt,                                                     \
    "longest training time in seconds (YAML also takes \"DD:HH:MM:SS\" or {days, hours, minutes, seconds}); " \
    "null: only measure",                                                                                     \
    fulgur::check::Positive{})                                                                                \
  X(fulgur::Interval, interval, fulgur::Interval::Step,                                                       \
    "check the time after every optimizer step (step; with several processes on the trainer's "              \
    "stop_check_every_n_steps schedule) or epoch (epoch)",                                                    \
    fulgur::check::Any{})                                                                                     \
  X(bool, verbose, true, "print a line on rank 0 when the time is up", fulgur::check::Any{})

struct TimerOptions {
  FULGUR_OPTIONS(TimerOptions, FULGUR_TIMER_OPTIONS)
};

/// Measures the time spent training, validating and testing and stops
/// training cleanly (the normal end hooks and loggers run) once `duration`
/// is used up. Rank 0's clock decides for all processes. The elapsed time is
/// part of the state, so a resumed run continues the same clock.
///
///   auto timer = std::make_shared<Timer>(TimerOptions().duration(Timer::parse_duration("00:12:00:00")));
class Timer : public Callback {
 public:
  using Options = TimerOptions;
  explicit Timer(TimerOptions options = {});
  /// "DD:HH:MM:SS" (days may exceed two digits) into seconds.
  static double parse_duration(const std::string& text);

  std::string state_key() const override { return "Timer"; }
  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;

  void on_train_start(Trainer&, LightningModule&) override { start(RunningStage::Train); }
  void on_train_end(Trainer&, LightningModule&) override { stop(RunningStage::Train); }
  void on_validation_start(Trainer& trainer, LightningModule&) override;
  void on_validation_end(Trainer& trainer, LightningModule&) override;
  void on_test_start(Trainer&, LightningModule&) override { start(RunningStage::Test); }
  void on_test_end(Trainer&, LightningModule&) override { stop(RunningStage::Test); }
  void on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override;
  void on_train_epoch_end(Trainer& trainer, LightningModule&) override;

  /// Seconds spent in `stage` (Train, Validate or Test), including time
  /// restored from a checkpoint.
  double time_elapsed(RunningStage stage = RunningStage::Train) const;
  /// Seconds of `duration` left for `stage` (nullopt without a duration).
  std::optional<double> time_remaining(RunningStage stage = RunningStage::Train) const;
  const TimerOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Span {
    std::optional<Clock::time_point> start, end;
    double offset = 0.0;  // seconds restored from a checkpoint
  };
  void start(RunningStage stage);
  void stop(RunningStage stage);
  void check_time_remaining(Trainer& trainer);

  TimerOptions options_;
  Span spans_[3];
};

}  // namespace fulgur
