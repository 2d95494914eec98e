#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/trainer/loops/cuda_graph_step.hpp>
#include <fulgur/trainer/loops/evaluation_loop.hpp>
#include <fulgur/trainer/loops/progress.hpp>
#include <fulgur/trainer/result_collection.hpp>

namespace fulgur {

class RunContext;

/// One training epoch: training_step, backward, and every
/// accumulate_grad_batches batches (and at the epoch's last batch) gradient
/// clipping, the optimizer step and step-interval LR schedulers; runs
/// validation where val_check_interval says. Each optimizer step advances
/// the context's StepCounter (through StepEngine::after_optimizer_step, as
/// a manual step does). With manual optimization training_step does
/// backward and the steps itself, and steps its schedulers too.
class TrainingEpochLoop {
 public:
  explicit TrainingEpochLoop(RunContext& context);

  /// Runs the epoch `epoch` over `train` (at most `num_batches` batches).
  /// `val` may be empty (no validation); `num_val_batches[i]` for its loader i
  /// (0 on a rank whose shard is empty: it still takes part).
  void run(DataLoader& train, int64_t num_batches, const std::vector<std::shared_ptr<DataLoader>>& val,
           const std::vector<int64_t>& num_val_batches);

  /// max_steps reached, or a stop was requested and may be honoured.
  bool done() const;
  const Progress& batch_progress() const { return batch_progress_; }
  int64_t num_batches() const { return num_batches_; }
  EvaluationLoop& val_loop() { return val_loop_; }

  /// True between the start of run() and its end (hooks inside an epoch).
  bool running() const { return running_; }
  /// Whether the last epoch ran all its batches (false after a stop mid-epoch).
  bool epoch_complete() const { return epoch_complete_; }
  /// Counters for checkpoints: batches, optimizer steps, where validation last ran.
  c10::impl::GenericDict state_dict() const;
  /// Restores the counters; the next run() continues the epoch after
  /// `batches_done` batches (running a validation that was due and not yet done).
  void load_state_dict(const c10::impl::GenericDict& state, int64_t batches_done);

 private:
  void advance(const Batch& batch, int64_t batch_idx, bool is_last_batch);
  torch::Tensor training_step(const Batch& batch, int64_t batch_idx);
  /// training_step, backward and (when `step_now`) the optimizer step up to
  /// and including optimizer.step(): what a CUDA graph captures.
  torch::Tensor forward_backward_step(const Batch& batch, int64_t batch_idx, int64_t accumulate, bool step_now);
  /// Steps the epoch schedulers due at `count` epochs.
  void step_schedulers(Interval interval, int64_t count);
  /// One scheduler step (StepEngine::step_scheduler on the callback metrics).
  void step_scheduler(const LRSchedulerConfig& config);
  bool should_validate(int64_t batch_idx, bool is_last_batch) const;

  RunContext& context_;
  ResultCollection results_{RunningStage::Train};
  Progress batch_progress_;
  EvaluationLoop val_loop_;
  int64_t num_batches_ = 0;
  bool running_ = false;
  bool epoch_complete_ = true;
  bool restarting_ = false;
  int64_t validated_at_batch_total_ = -1;
  CudaGraphStep graph_;  // the cuda_graph option
  const torch::optim::Optimizer* graph_optimizer_ = nullptr;  // the fit graph_ was set up for  // batch_progress_.total when validation last ran in training
};

}  // namespace fulgur
