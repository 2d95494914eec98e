#pragma once

#include <fulgur/trainer/callback.hpp>

#include <torch/arg.h>

#include <chrono>
#include <optional>
#include <string>

namespace fulgur {

namespace cli {
class ConfigSection;
}

/// Options of Timer, with Lightning's names.
struct TimerOptions {
  /// Longest training time in seconds; unset: only measure.
  TORCH_ARG(std::optional<double>, duration) = std::nullopt;
  /// Check the time after every optimizer step ("step") or epoch ("epoch").
  TORCH_ARG(std::string, interval) = "step";
  /// Print a line on rank 0 when the time is up.
  TORCH_ARG(bool, verbose) = true;
};

/// Measures the time spent training, validating and testing and stops
/// training cleanly (the normal end hooks and loggers run) once `duration`
/// is used up. Rank 0's clock decides for all processes. The elapsed time is
/// part of the state, so a resumed run continues the same clock.
///
///   auto timer = std::make_shared<Timer>(TimerOptions().duration(Timer::parse_duration("00:12:00:00")));
class Timer : public Callback {
 public:
  enum class Stage { Train, Validate, Test };

  explicit Timer(TimerOptions options = {});
  static std::shared_ptr<Callback> from_config(cli::ConfigSection& section);
  /// "DD:HH:MM:SS" (days may exceed two digits) into seconds.
  static double parse_duration(const std::string& text);

  std::string state_key() const override { return "Timer"; }
  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;

  void on_train_start(Trainer&, LightningModule&) override { start(Stage::Train); }
  void on_train_end(Trainer&, LightningModule&) override { stop(Stage::Train); }
  void on_validation_start(Trainer& trainer, LightningModule&) override;
  void on_validation_end(Trainer& trainer, LightningModule&) override;
  void on_test_start(Trainer&, LightningModule&) override { start(Stage::Test); }
  void on_test_end(Trainer&, LightningModule&) override { stop(Stage::Test); }
  void on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override;
  void on_train_epoch_end(Trainer& trainer, LightningModule&) override;

  /// Seconds spent in `stage`, including time restored from a checkpoint.
  double time_elapsed(Stage stage = Stage::Train) const;
  /// Seconds of `duration` left for `stage` (nullopt without a duration).
  std::optional<double> time_remaining(Stage stage = Stage::Train) const;
  const TimerOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Span {
    std::optional<Clock::time_point> start, end;
    double offset = 0.0;  // seconds restored from a checkpoint
  };
  void start(Stage stage);
  void stop(Stage stage);
  void check_time_remaining(Trainer& trainer);

  TimerOptions options_;
  Span spans_[3];
};

}  // namespace fulgur
