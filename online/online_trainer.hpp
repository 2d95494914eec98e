#pragma once

#include <fulgur/core/stop_signals.hpp>
#include <fulgur/online/fabric.hpp>
#include <fulgur/online/online_options.hpp>
#include <fulgur/online/sample_stream.hpp>
#include <fulgur/online/stopped_error.hpp>
#include <fulgur/online/weight_snapshot.hpp>

#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fulgur {

/// Trains a model inside a program that owns its loop (a simulation), in
/// one of two modes on the same object:
/// - inline: train_step(inputs, targets) runs one optimizer step on the
///   caller's thread and returns the loss (reproducible: the same as fit
///   on the same batches in the same order);
/// - background: start() trains on a thread of its own from the samples
///   push() copies into a SampleStream, while the program goes on.
/// In both, predict(inputs) runs the most recently published weights (every
/// publish_every_n_steps steps) on a second instance of the model, so it
/// never sees a half-updated model and never waits for a training step.
///
///   OnlineTrainer online([] { return std::make_shared<MyModel>(); }, options);
///   online.start();
///   online.push(x, y);                 // each simulation step
///   torch::Tensor y_hat = online.predict(x);
///   online.stop();
class OnlineTrainer {
 public:
  using ModuleFactory = std::function<std::shared_ptr<LightningModule>()>;
  /// Calls `make_module` twice: the model that trains (first: seed before
  /// constructing for reproducible weights) and the one predict() runs. The
  /// module's predict_step(Batch{inputs}, 0) is what predict() returns.
  explicit OnlineTrainer(ModuleFactory make_module, OnlineOptions options = {},
                         std::vector<std::shared_ptr<Logger>> loggers = {},
                         std::optional<Platform> platform = std::nullopt);
  /// Stops background training (the end of the stream) and waits for it;
  /// an error it had is dropped here (call stop() to see it).
  ~OnlineTrainer();
  OnlineTrainer(const OnlineTrainer&) = delete;
  OnlineTrainer& operator=(const OnlineTrainer&) = delete;

  // --- inline mode ------------------------------------------------------------------
  /// One optimizer step on `inputs` and `targets` (one batch); returns the
  /// loss. A NaN or infinite loss or gradient takes no step: with
  /// on_nonfinite stop (the default) it throws std::runtime_error naming the
  /// step, the rank and the tensor; with skip it is counted. Not while
  /// background training runs. Each call is a run of its own: the thread
  /// count, SIGPIPE ignored and (with checkpoint_dir) the stop handlers hold
  /// during it only; between calls the process is the program's.
  double train_step(const torch::Tensor& inputs, const torch::Tensor& targets);

  // --- background mode --------------------------------------------------------------
  /// Starts training on its own thread from stream(): it takes batches as
  /// they come, until stop(), the end of the stream, max_steps or an error.
  void start();
  /// Copies samples into the stream (SampleStream::push); rethrows the
  /// training thread's error once it failed. Throws StoppedError once
  /// training stopped on a signal (also to a push that waited for room
  /// then), and std::logic_error at once for a push into a full blocking
  /// stream before start() (it would wait forever). `source` tags the
  /// samples for the stream's counts_by_source() (-1: none).
  void push(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t source = -1);
  /// Ends the stream, waits for the training thread, publishes the last
  /// weights, and rethrows the error that stopped training, if any.
  void stop();
  /// Background training takes no step until resume(): returns once the
  /// training thread is between steps and waits (at once when it is not
  /// running). Pushes still fill the stream; a stop signal still saves and
  /// stops. With several ranks, every rank pauses and resumes.
  void pause();
  void resume();
  bool paused() const { return pause_requested_.load(); }
  bool running() const { return running_.load(); }
  SampleStream& stream() { return *stream_; }

  // --- both ---------------------------------------------------------------------------
  /// The published model's predict_step on `inputs` (no gradients), from any
  /// thread; the result is on the CPU.
  torch::Tensor predict(const torch::Tensor& inputs);
  /// Publishes the training model's weights now (between steps only: from
  /// the thread that calls train_step, or after stop()). Under a strategy
  /// that splits parameters (fsdp FULL_SHARD, a model_parallel mesh's tp)
  /// the parts are gathered whole: every rank calls it.
  void publish();
  /// The loss of the last step taken or skipped (NaN before any): what
  /// background training shows of its progress.
  double last_loss() const { return last_loss_.load(); }
  /// Steps skipped because their loss or gradients were not finite
  /// (on_nonfinite: skip).
  int64_t skipped_steps() const { return skipped_steps_.load(); }
  /// Optimizer steps taken (its Fabric's one StepCounter; any thread may
  /// read it), and the step of the weights predict() uses.
  int64_t global_step() const { return fabric_->global_step(); }
  int64_t published_step() const { return snapshot_.step(); }
  /// Writes the training state (weights, optimizer, scheduler, step: see
  /// Fabric::save_checkpoint; with checkpoint_buffer, the stream's samples
  /// too); every rank calls it, between steps (inline mode, or after stop()).
  void save_checkpoint(const std::filesystem::path& path);
  /// Restores it, so training continues from that step, and publishes the
  /// restored weights.
  void load_checkpoint(const std::filesystem::path& path);
  /// The signal (SIGTERM, SIGUSR1) that made training save
  /// checkpoint_dir/online_last.ckpt and stop; 0 if none. After it,
  /// train_step throws: the program exits (128 + the signal) and its
  /// restart resumes from the checkpoint.
  int stop_signal() const { return stop_signal_.load(); }
  /// The file checkpoint_dir keeps (empty without checkpoint_dir).
  std::filesystem::path last_checkpoint() const;
  /// The layer under it: strategy, collectives, loggers.
  Fabric& fabric() { return *fabric_; }
  /// The model that trains (read it only between steps).
  LightningModule& module() { return *module_; }

 private:
  /// One step on `batch`, taken only when its loss and gradients are finite
  /// on every rank (OnlineOptions::on_nonfinite); publishes when due.
  double step(const Batch& given);
  /// Under a model_parallel mesh, the rows every rank of this rank's tp x cp
  /// block was given, joined (they train on one batch); else `batch`.
  Batch block_batch(const Batch& batch);
  /// What is not finite on this rank in step `at` ("the loss of step 3 is
  /// nan on rank 0", "the gradient of 'net.0.weight' in step 3 holds NaN or
  /// Inf on rank 1 (loss 0.5)"), or "" when all is.
  std::string nonfinite_tensor(double loss, int64_t at) const;
  void run_background();
  /// The training thread, while pause() holds it: waits between steps
  /// until resume(), stop() or a stop signal.
  void park(const std::function<bool()>& signalled);
  /// Holds StopSignals for the run: an inline step, or start() to stop() (checkpoint_dir only).
  void hold_stop_signals();
  /// Fabric::save_checkpoint with extra_state().
  void save_state(const std::filesystem::path& path);
  /// Fabric::load_checkpoint, the samples pushed back (checkpoint_buffer).
  void load_state(const std::filesystem::path& path);
  /// After a step: a stop signal on any rank saves the checkpoint and stops.
  void check_stop_signal();
  /// After a failed step (a peer died, a NaN loss): publishes this rank's
  /// weights, those of the last step every rank finished, and with
  /// checkpoint_dir writes them there with no collective. Says what it kept.
  /// Under a strategy that splits parameters it keeps the last published
  /// weights (gathering them would need the peers).
  std::string keep_trained_state() noexcept;
  /// The first step's loss; std::invalid_argument, before backward, when
  /// the loss warned that it broadcasts the targets (LibTorch's "Using a
  /// target size ... different to the input size").
  torch::Tensor first_loss(const Batch& batch);
  /// Throws StoppedError: `call` after training stopped on a signal.
  [[noreturn]] void throw_stopped(const char* call) const;
  /// Throws `error`'s message with what keep_trained_state() kept.
  [[noreturn]] void fail_keeping(const std::exception& error);
  /// What a checkpoint holds beyond Fabric's: the stream's samples (checkpoint_buffer).
  Checkpoint extra_state() const;
  /// The background error, as thrown by stop() and push().
  [[noreturn]] void rethrow_training_error();

  OnlineOptions options_;
  std::shared_ptr<LightningModule> module_;
  std::shared_ptr<LightningModule> inference_module_;
  std::unique_ptr<Fabric> fabric_;
  std::shared_ptr<SampleStream> stream_;
  WeightSnapshot snapshot_;
  std::mutex predict_mutex_;
  int64_t inference_step_ = -1;  // under predict_mutex_
  std::atomic<int64_t> skipped_steps_{0};
  std::atomic<double> last_loss_{std::numeric_limits<double>::quiet_NaN()};
  bool first_step_checked_ = false;  // the training thread's (inline: the caller's)
  std::atomic<bool> pause_requested_{false};
  bool parked_ = false;  // under pause_mutex_
  std::mutex pause_mutex_;
  std::condition_variable pause_changed_;
  std::atomic<bool> running_{false};
  std::atomic<bool> failed_{false};
  std::optional<StopSignals> signals_;  // with checkpoint_dir, during a step or the background run
  std::atomic<int> stop_signal_{0};
  std::thread thread_;
  std::exception_ptr error_;  // written by the thread before failed_
};

}  // namespace fulgur
