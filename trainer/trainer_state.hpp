#pragma once

#include <fulgur/modules/stage.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

class Trainer;

/// The Trainer's read-only run state in one place, as Lightning groups it
/// in properties (trainer.state, trainer.global_step, ...): what callbacks,
/// loggers and a program read during or after a run. A view: it reads the
/// Trainer each time it is asked, so keep the Trainer alive while using it.
///
///   if (trainer.state().global_step() % 100 == 0) { ... }
class TrainerState {
 public:
  explicit TrainerState(const Trainer& trainer) : trainer_(trainer) {}

  /// The entry point running (Fit, Validate, Test, Predict); nullopt between runs.
  std::optional<Stage> stage() const;
  /// True while fit checks its validation loop before training.
  bool sanity_checking() const;
  /// Optimizer steps taken so far.
  int64_t global_step() const;
  /// Index of the epoch running (or the number completed, between epochs).
  int64_t current_epoch() const;
  int64_t num_training_batches() const;
  /// Batches of the evaluation loop running now (validation, test or the
  /// sanity check); 0 outside one.
  int64_t num_eval_batches() const;
  /// Batches per optimizer step in the running epoch: the option, or what a
  /// GradientAccumulationScheduler set for this epoch
  /// (Trainer::set_accumulate_grad_batches).
  int64_t accumulate_grad_batches() const;
  /// Whether training stops after the current step (Trainer::request_stop).
  bool should_stop() const;
  /// The signal (SIGUSR1 or SIGTERM) that stopped the last fit, agreed by
  /// every rank; 0 when fit was not stopped by a signal. Set at a step
  /// boundary, before the loops' end hooks run, so callbacks (the checkpoint
  /// written whenever training stops) can see why training stopped.
  int stop_signal() const;
  /// True while on_exception and teardown run after a failure: a callback
  /// must start no collective then (a peer may be gone).
  bool interrupted() const;
  /// Whether the ranks agree on stopping after this optimizer step (the
  /// Trainer's stop-check schedule; every rank computes the same answer):
  /// where a callback that may stop training (Timer) decides.
  bool stop_check_due(bool last_batch_of_epoch) const;

  /// Latest values by base name: what ModelCheckpoint and EarlyStopping monitor.
  /// Step values logged since the last read are read from the device here,
  /// on first use: a step nobody looks at never waits for the device.
  const std::map<std::string, double>& callback_metrics() const;
  /// What the progress bar shows: the values logged with prog_bar, by name.
  const std::map<std::string, double>& progress_bar_metrics() const;

 private:
  const Trainer& trainer_;
};

}  // namespace fulgur
