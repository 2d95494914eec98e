#pragma once

#include <fulgur/trainer/checkpoint/async_checkpoint_io.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_io.hpp>

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
  /// Waits for a write in flight (see finish_writes_quietly()).
  ~CheckpointConnector();

  /// The trainer's state now. Call on the process that writes (rank 0).
  Checkpoint dump(bool weights_only);
  /// Rank 0 writes `path` atomically, then every rank learns whether it
  /// worked (a collective, so an error on rank 0 fails all ranks instead of
  /// hanging them). Throws CheckpointError naming the path. Under a
  /// sharding strategy every rank takes part in gathering the whole state
  /// one tensor at a time (state_dict_type full) or writes its own shard
  /// (sharded, always synchronously; see sharded_checkpoint.hpp). With the
  /// trainer's async_checkpoint option rank 0 only waits for the previous
  /// write and copies the state to host buffers; a background thread writes
  /// (AsyncCheckpointIO), and its error comes from the next save or
  /// finish_writes().
  void save(const std::filesystem::path& path, bool weights_only);
  /// Rank 0 alone (no collective: after a failure or after a run) waits for
  /// the write in flight, then writes `path` synchronously. A failed earlier
  /// write is rethrown, or only printed while the trainer handles an
  /// exception (the checkpoint of the failure still gets written).
  void save_alone(const std::filesystem::path& path, bool weights_only);
  /// Runs `action` once the file of the last save() exists: now when saves
  /// are synchronous or nothing is in flight, else on the writer thread
  /// after the write succeeded (never after a failed one). For what relies
  /// on the new file: removing an older one, linking last.ckpt to it.
  void after_write(std::function<void()> action);
  /// Every rank: rank 0 waits for the write in flight, then all learn
  /// whether it worked (as save()). Where a run ends, and before a signal
  /// stop lets any rank exit: the last checkpoint is complete on disk.
  void finish_writes();
  /// This process alone waits for its write in flight and prints a failed
  /// write's error instead of throwing (the exception path, destructors).
  void finish_writes_quietly();
  /// At the end of a run: waits for the writes in flight (quietly) and ends
  /// the asynchronous writer's thread, so no thread of the run outlives it
  /// (a later asynchronous save starts a new one).
  void end_run();
  /// The background writer (created on first use), for tests' hooks.
  AsyncCheckpointIO& async_io();

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
  bool async() const;
  /// The run's optimizers, in order.
  std::vector<const torch::optim::Optimizer*> optimizers() const;
  RunContext& context_;
  FitLoop& fit_loop_;
  std::unique_ptr<AsyncCheckpointIO> async_io_;
};

}  // namespace fulgur
