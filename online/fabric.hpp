#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/modules/reduce_op.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/engine/step_counter.hpp>
#include <fulgur/loggers/logger.hpp>
#include <fulgur/trainer/trainer_config.hpp>
#include <fulgur/trainer/run_settings.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class CheckpointWriter;
class FabricRuntime;
class ScopedMetricSink;
class ScopedModuleRuntime;

/// The layer under the Trainer, for a program that owns its loop
/// (Lightning's Fabric): the strategy, precision and device that
/// TrainerOptions choose, a module and its optimizers set up on them, and
/// the Trainer's own step sequence. It starts no processes: under mpirun,
/// srun or torchrun each process makes one Fabric and the ranks come from
/// the launcher's environment.
///
///   Fabric fabric(TrainerOptions().strategy(StrategyKind::DDP));
///   fabric.setup(model);
///   for (const Batch& batch : my_batches) fabric.training_step(batch);
class Fabric {
 public:
  /// Resolves `options` as the Trainer does (std::invalid_argument naming a
  /// bad option) and creates the strategy. Throws std::invalid_argument when
  /// the options ask for processes no launcher started.
  explicit Fabric(TrainerOptions options = {}, std::vector<std::shared_ptr<Logger>> loggers = {},
                  std::optional<Platform> platform = std::nullopt);
  ~Fabric();
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  /// Joins the process group (a collective under ddp, horovod, fsdp), moves
  /// `module` to the device and wraps its gradient path, then builds its
  /// optimizers (configure_optimizers). From here to the Fabric's end is its
  /// run: SIGPIPE is ignored meanwhile (RunSettings). The module must outlive the Fabric;
  /// from here on its log() goes to the loggers and its all_reduce() and
  /// device() to this Fabric's strategy.
  void setup(LightningModule& module);

  // --- the step, as the Trainer runs it ------------------------------------------------
  /// training_step(batch) under the precision's autocast, after the
  /// strategy's before_training_step; `batch` is moved to the device first.
  /// Checks that the loss is a scalar that requires grad.
  torch::Tensor training_loss(const Batch& batch);
  /// Backward through the precision plugin and the strategy (gradients
  /// averaged over ranks), with the module's backward hooks around it.
  void backward(const torch::Tensor& loss);
  /// Optimizer `index` steps through the strategy (gradient_clip_val from the
  /// options), its gradients are zeroed, its step-interval scheduler steps,
  /// and the global step counts one; values logged since the last step go to
  /// the loggers. Returns whether the optimizer stepped (float16's scaler
  /// skips steps with inf/NaN gradients).
  bool optimizer_step(size_t index = 0);
  /// training_loss, backward, optimizer_step: one Trainer step. Returns the
  /// loss, detached. With several optimizers, std::logic_error: step each
  /// by index.
  torch::Tensor training_step(const Batch& batch);
  /// Steps the epoch-interval schedulers (a Fabric has no epochs of its
  /// own), each every `frequency` calls. A ReduceLROnPlateau scheduler
  /// steps on the latest value of its monitor logged through the module's
  /// log() or Fabric::log (rank 0's, on every rank); a monitor never logged
  /// throws (strict) or warns and skips.
  void end_epoch();

  // --- the processes ----------------------------------------------------------------
  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op = ReduceOp::Sum);
  torch::Tensor broadcast(const torch::Tensor& tensor, int64_t source_rank = 0);
  void barrier(const std::string& name = "fabric");
  int64_t global_rank() const;
  int64_t world_size() const;
  bool is_global_zero() const { return global_rank() == 0; }
  torch::Device device() const;
  Batch to_device(const Batch& batch) const;

  // --- logging ----------------------------------------------------------------------
  /// Sends values to the loggers at the current global step (rank 0 only).
  void log(const std::string& name, double value);
  void log_dict(const std::map<std::string, double>& values);
  /// Writes what the loggers hold to their files now (rank 0 only;
  /// CSVLogger keeps rows until then). `end_epoch()` and the Fabric's end
  /// do it too; the online trainer at every publish.
  void save_logs();

  // --- checkpoints -----------------------------------------------------------------
  /// Writes the module's weights (`state_dict`), its optimizers' and
  /// schedulers' states (`optimizer_states`, `lr_schedulers`), the
  /// precision's scaler and `global_step` with the Trainer's keys, plus the
  /// entries of `extra`; every rank calls it. Through the Trainer's writer
  /// (CheckpointWriter), with the Trainer's options: a whole file from rank
  /// 0, written atomically, now or with `async_checkpoint` on a background
  /// thread (the call waits only for a copy to host memory); under fsdp the
  /// shards are gathered (`fsdp.state_dict_type: full`) or every rank writes
  /// its own beside rank 0's metadata (`sharded`, always synchronous). A
  /// failed write throws CheckpointError naming the path on every rank (an
  /// asynchronous one from the next save, load, finish_checkpoint_writes()
  /// or, printed, the Fabric's end).
  void save_checkpoint(const std::filesystem::path& path, const Checkpoint& extra = new_state_dict());
  /// The same file written by this rank alone, now, with no collective:
  /// for a rank whose peers died (its weights are every rank's after the
  /// last step they all finished). Written atomically, so survivors that
  /// all write the same path leave one whole file. Not under a strategy
  /// that shards (fsdp): std::logic_error.
  void write_checkpoint(const std::filesystem::path& path, const Checkpoint& extra = new_state_dict()) const;
  /// Every rank: waits until the asynchronous writes are on disk (rank 0's
  /// writer), then all learn whether they worked (as save_checkpoint).
  /// Nothing to wait for without `async_checkpoint`.
  void finish_checkpoint_writes();
  /// Restores what save_checkpoint wrote, whole or sharded, from any world
  /// size (every rank reads it, after the writes in flight finished) and
  /// returns the whole checkpoint, `extra` entries included. A missing or
  /// corrupt file, or weights, optimizer or scheduler states that do not
  /// fit, throw naming the path — and change nothing: weights, optimizer
  /// and scheduler states, the scaler and global_step stay as they were.
  Checkpoint load_checkpoint(const std::filesystem::path& path);

  /// Optimizer steps taken since setup (or restored by load_checkpoint).
  int64_t global_step() const { return steps_.value(); }
  const TrainerConfig& config() const { return config_; }
  Strategy& strategy() { return *strategy_; }
  /// The optimizers (each with its scheduler) of the module set up.
  std::vector<OptimizerConfig>& optimizers() { return optimizers_; }
  LightningModule& module();
  const std::vector<std::shared_ptr<Logger>>& loggers() const { return loggers_; }

 private:
  friend class FabricRuntime;
  // Takes its run scope per step and set-up instead of from setup() to the end.
  friend class OnlineTrainer;
  /// Sends what the module logged to the loggers.
  void flush_logged();
  /// `values` to the loggers at the current step (rank 0 only).
  void send(const std::map<std::string, double>& values);
  /// What a checkpoint holds of the training (weights, optimizers,
  /// schedulers, scaler, step); `copy`: tensors cloned, so a later load
  /// cannot change them.
  Checkpoint training_state(bool copy) const;
  /// Puts `c`'s training state in place (load_checkpoint's second half);
  /// `whole`: its tensors are whole (a file), else as this rank holds them
  /// (the state kept before a failed load).
  void restore(const Checkpoint& c, const std::string& source, bool whole);
  /// One scheduler step; a plateau's on its monitored value (metrics_).
  void step_scheduler(const LRSchedulerConfig& config);

  TrainerConfig config_;
  std::optional<RunSettings> run_;  // from setup() on; given back after the strategy (and its group) ends
  std::unique_ptr<Strategy> strategy_;
  std::unique_ptr<CheckpointWriter> writer_;  // after the strategy: it waits for its write first
  std::vector<std::shared_ptr<Logger>> loggers_;
  std::unique_ptr<FabricRuntime> runtime_;
  std::unique_ptr<ScopedModuleRuntime> attached_;
  std::unique_ptr<ScopedMetricSink> sink_;
  LightningModule* module_ = nullptr;
  std::vector<OptimizerConfig> optimizers_;
  std::vector<std::shared_ptr<LightningOptimizer>> lightning_optimizers_;
  StepCounter steps_;
  int64_t epochs_ = 0;  // end_epoch() calls
  /// The latest value of everything logged (what a plateau scheduler monitors).
  std::map<std::string, double> metrics_;
};

}  // namespace fulgur
