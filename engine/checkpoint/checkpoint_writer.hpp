#pragma once

#include <fulgur/engine/checkpoint/async_checkpoint_io.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fulgur {

class Strategy;

/// The one way a training checkpoint reaches disk, for every front end (the
/// Trainer's CheckpointConnector, Fabric, and so the OnlineTrainer), as the
/// strategy holds the state:
/// - whole, written by rank 0: now (CheckpointIO), or with `async` on a
///   background thread (AsyncCheckpointIO: the step waits only for a copy);
/// - whole from parts: fsdp's or a tp plan's sharded tensors gathered one
///   at a time (ShardedStateWriter::gather_whole, `state_dict_type: full`),
///   a pipeline's stages gathered to rank 0 (PipelineCheckpoint);
/// - sharded, every rank its part beside rank 0's metadata, always
///   synchronously (`fsdp.state_dict_type` or `model_parallel.state_dict_type`
///   sharded: ShardedStateWriter::save_sharded, MeshShardedCheckpoint).
/// load_whole_checkpoint (checkpoint_weights.hpp) reads either kind back.
class CheckpointWriter {
 public:
  /// `async`: rank 0's whole files are written in the background (the
  /// async_checkpoint option of the Trainer and Fabric).
  CheckpointWriter(Strategy& strategy, bool async);
  /// Waits for a write in flight (see finish_writes_quietly()).
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  bool async() const { return async_; }

  /// Every rank calls it (collectives pair up): `dump` is this rank's state
  /// with `module`'s weights and `optimizers`' states (in the checkpoint's
  /// order), called once on every rank that needs it. Writes `path` as the
  /// class comment says, then every rank learns whether it worked: throws
  /// CheckpointError naming the path on every rank (an asynchronous write's
  /// error comes from the next save or finish_writes()).
  void save(const std::filesystem::path& path, torch::nn::Module& module,
            const std::vector<const torch::optim::Optimizer*>& optimizers, const std::function<Checkpoint()>& dump);
  /// This rank alone, no collective (after a failure, after a run, a rank
  /// whose peers died): waits for the write in flight, then writes
  /// `checkpoint` (whole) now. A failed earlier write is rethrown, or with
  /// `quiet` only printed (the checkpoint of a failure still gets written).
  void save_alone(const Checkpoint& checkpoint, const std::filesystem::path& path, bool quiet);
  /// Runs `action` once the file of the last save() exists: now when saves
  /// are synchronous or nothing is in flight, else on the writer thread
  /// after the write succeeded (never after a failed one).
  void after_write(std::function<void()> action);
  /// Every rank: rank 0 waits for the write in flight, then all learn
  /// whether it worked (as save()). Nothing to do, and no collective,
  /// unless `async`.
  void finish_writes();
  /// This process alone waits for its write in flight and prints a failed
  /// write's error instead of throwing (the exception path, destructors).
  void finish_writes_quietly();
  /// Waits quietly and ends the background thread, so none outlives a run
  /// (a later asynchronous save starts a new one).
  void end_run();
  /// The background writer (created on first use), for tests' hooks.
  AsyncCheckpointIO& async_io();

 private:
  Strategy& strategy_;
  bool async_;
  std::unique_ptr<AsyncCheckpointIO> async_io_;
};

}  // namespace fulgur
