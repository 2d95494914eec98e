#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_writer.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class FitLoop;
class RunContext;

/// Gathers everything a run needs to continue into a Checkpoint, and puts
/// it back: model weights, optimizer and LR-scheduler state, the gradient
/// scaler, loop progress (epoch, position inside it, global step), RNG
/// states, callback and logger states, hyper-parameters.
///
/// Key layout (what Python sees after torch.load): `fulgur_version`,
/// `epoch`, `global_step`, `state_dict`, `optimizer_states`,
/// `lr_schedulers`, `precision`, `loops`, `loader`, `rng_states`,
/// `callbacks`, `loggers`, `hyper_parameters`, `run_identity`. A weights-only
/// checkpoint keeps the first four, `hyper_parameters` and `run_identity`.
class CheckpointConnector {
 public:
  /// `context`: the run whose state it saves; `fit_loop`: the Trainer's,
  /// whose counters a checkpoint holds.
  CheckpointConnector(RunContext& context, FitLoop& fit_loop);
  /// Waits for a write in flight (CheckpointWriter).
  ~CheckpointConnector();

  /// The trainer's state now. Call on the process that writes (rank 0).
  Checkpoint dump(bool weights_only);
  /// Writes the run's state to `path` through the CheckpointWriter
  /// (every rank calls it; whole, sharded or asynchronous as the strategy
  /// and the async_checkpoint option say). Throws CheckpointError naming
  /// the path on every rank.
  void save(const std::filesystem::path& path, bool weights_only);
  /// Rank 0 alone (no collective: after a failure or after a run) writes
  /// `path` synchronously once the write in flight is done; a failed
  /// earlier write is only printed while the trainer handles an exception.
  void save_alone(const std::filesystem::path& path, bool weights_only);
  /// The writer: after_write, finish_writes, end_run, async_io.
  CheckpointWriter& writer() { return writer_; }

  /// Key of the run identity (see run_identity()) in every checkpoint.
  static constexpr const char* kRunIdentityKey = "run_identity";

  /// Copies the checkpoint's weights into the module (strict).
  void restore_model(const Checkpoint& checkpoint, const std::string& source);
  /// Points the loggers at the checkpoint's run folder and rows.
  void restore_loggers(const Checkpoint& checkpoint);
  /// Everything else: optimizer, scheduler, scaler, loops, callbacks, RNG.
  /// Call after configure_optimizers, right before training continues.
  void restore_training_state(const Checkpoint& checkpoint, const std::string& source);

 private:
  /// The run's optimizers, in order.
  std::vector<const torch::optim::Optimizer*> optimizers() const;
  RunContext& context_;
  FitLoop& fit_loop_;
  CheckpointWriter writer_;
};

}  // namespace fulgur
