#pragma once

#include <fulgur/trainer/callback.hpp>
#include <fulgur/loggers/logger.hpp>
#include <fulgur/trainer/profilers/profiler.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/result_collection.hpp>
#include <fulgur/trainer/trainer_config.hpp>
#include <fulgur/trainer/trainer_options.hpp>
#include <fulgur/trainer/trainer_state.hpp>
#include <fulgur/modules/stage.hpp>

#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class CheckpointConnector;
class HookDispatcher;
class LoggerConnector;
class ModuleRuntimeConnector;
class FitLoop;
class EvaluationLoop;
class PredictLoop;
class RunContext;
class SignalConnector;
class SubprocessLauncher;

/// Runs a LightningModule's loops over a DataModule's data: fit (train with
/// periodic validation), validate, test, predict. Options are resolved and
/// checked in the constructor, before anything touches a file or a device.
///
///   Trainer trainer(TrainerOptions().max_epochs(10).devices(2).strategy(StrategyKind::DDP));
///   trainer.fit(model, data);
///   auto metrics = trainer.test(model, data);
///
/// The Trainer runs the same in any program, and is a guest in it: the
/// constructor only resolves and checks options; a run (fit, validate,
/// test, predict) changes what it needs and puts back exactly what was
/// there when it ends, on every path out (docs/distributed.md, "A guest in
/// your process"):
/// - launching: when the options ask for more processes than were started
///   (devices * num_nodes > 1 and no torchrun, srun or mpirun), the first
///   run asks the SubprocessLauncher to start the other local ranks as new
///   processes of this program; this process becomes local rank 0 (its
///   environment is not changed). A program that builds several Trainers
///   hands each the same launcher (the last constructor argument); a
///   Trainer given none makes its own;
/// - signals: during a run, SIGUSR1, SIGTERM and SIGINT are only recorded
///   (SignalConnector); fit stops at a step every rank agrees on and
///   state().stop_signal() / exit_code() report it. Nothing is raised again by the
///   Trainer; a SIGTERM no run acted on goes to the program's own handler
///   when the run ends;
/// - settings: the thread count, deterministic algorithms and cuDNN's
///   benchmark mode the options ask for, and SIGPIPE ignored, hold during a
///   run only (RunSettings);
/// - modules: given no Platform, the Trainer detects one for its options
///   (Platform::detect_for): with accelerator 'cpu' the CUDA module is never
///   loaded;
/// - resuming: fit() of a job that SLURM requeued or torchrun restarted
///   continues from the newest checkpoint its own run wrote (same
///   run_identity), unless ckpt_path says otherwise;
/// - requeueing: after a SIGUSR1 stop under SLURM, rank 0 requeues the job
///   (auto_requeue, on by default).
class Trainer {
 public:
  explicit Trainer(TrainerOptions options = {}, std::vector<std::shared_ptr<Callback>> callbacks = {},
                   std::vector<std::shared_ptr<Logger>> loggers = {}, std::optional<Platform> platform = std::nullopt,
                   std::shared_ptr<SubprocessLauncher> launcher = nullptr);
  /// Waits for checkpoint writes still in flight; changes nothing else.
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // --- entry points ---------------------------------------------------------------
  // `ckpt_path`: "" (start fresh, or resume a restarted job's own checkpoint),
  // "last", "best" or a file. fit() resumes
  // everything (weights, optimizer, loops, RNG, callbacks, loggers) and
  // continues exactly; the other stages load the weights.
  void fit(LightningModule& module, DataModule& data, const std::string& ckpt_path = "");
  /// Returns the epoch metrics the validation loop computed.
  std::map<std::string, double> validate(LightningModule& module, DataModule& data,
                                         const std::string& ckpt_path = "");
  /// Returns the epoch metrics the test loop computed.
  std::map<std::string, double> test(LightningModule& module, DataModule& data, const std::string& ckpt_path = "");
  /// Returns predict_step's output for every batch, in order (with several
  /// predict loaders, the first loader's batches first).
  std::vector<torch::Tensor> predict(LightningModule& module, DataModule& data, const std::string& ckpt_path = "");

  /// What the program returns once it is done with the Trainer, the same in
  /// any main(): 128 + the signal when the last fit was stopped by SIGUSR1
  /// or SIGTERM (138, 143: a scheduler sees the run as unfinished), also
  /// when it threw StopSignalError;
  /// otherwise, in the process that started the other local ranks, it waits
  /// for them and returns the first failure's code; else 0.
  ///
  ///   trainer.fit(model, data);
  ///   return trainer.exit_code();
  int exit_code();

  /// Writes a checkpoint of the current (or last) run to `path`, atomically,
  /// from rank 0. Inside a run every process must call it; in on_exception
  /// (a rank failed) rank 0 writes without waiting for the others.
  /// `after_write` runs once the file is on disk (with async_checkpoint, on
  /// the writer's side, later): what ModelCheckpoint removes or links then.
  void save_checkpoint(const std::filesystem::path& path, bool weights_only = false,
                       std::function<void()> after_write = {});

  // --- state, for callbacks and loggers ---------------------------------------------
  // The loops and connectors run on the RunContext; these read its state.
  const TrainerConfig& config() const { return config_; }
  /// The run's read-only state: stage, step, epoch, batch counts, stop
  /// requests and signals, the metrics callbacks monitor (TrainerState).
  TrainerState state() const { return TrainerState(*this); }
  /// Throws std::logic_error before the first run of a Trainer that starts
  /// its own ranks (they start with that run).
  Strategy& strategy();
  bool is_global_zero() const;
  /// This process's rank among all processes of the run, and their number
  /// (before a Trainer that starts its own ranks started them: 0, and the
  /// number it will start).
  int64_t global_rank() const;
  int64_t world_size() const;

  /// Asks training to stop after the current step; honoured once min_epochs
  /// have run. Every process must make the same decision.
  void request_stop();
  /// Sets the batches per optimizer step from the next batch on
  /// (GradientAccumulationScheduler, in on_train_epoch_start); every rank
  /// must set the same. >= 1.
  void set_accumulate_grad_batches(int64_t batches);
  /// The `profiler` option's profiler; null when off.
  const Profiler* profiler() const { return profiler_.get(); }

  const std::vector<std::shared_ptr<Callback>>& callbacks() const { return callbacks_; }
  const std::vector<std::shared_ptr<Logger>>& loggers() const { return loggers_; }
  /// The run folder: the first logger's log_dir, else default_root_dir.
  std::filesystem::path log_dir() const;

  /// The optimizers (each with its scheduler) of the running or last fit,
  /// in configure_optimizers' order.
  std::vector<OptimizerConfig>& optimizers();
  /// The training loader of the last fit (this process's shard); null
  /// before the first fit. Lightning's trainer.train_dataloader.
  DataLoader* train_dataloader() { return train_dataloader_.get(); }

 private:
  friend class TrainerState;  // reads the run's state
  /// Writes the profiler's report for the stage that ended (each rank its file).
  void write_profile();
  template <class Body>
  auto run_stage(Stage stage, LightningModule& module, DataModule& data,
                 std::string ckpt_path, Body&& body);
  void setup_run(LightningModule& module);
  /// Shards a loader by rank when several processes work together; only
  /// training shards are padded to equal length.
  std::shared_ptr<DataLoader> prepare_loader(std::shared_ptr<DataLoader> loader, bool training);
  /// The evaluation loaders, each prepared (sharded) as one would be.
  std::vector<std::shared_ptr<DataLoader>> prepare_loaders(const std::vector<std::shared_ptr<DataLoader>>& loaders);
  /// Each loader's batches under a limit_*_batches option.
  static std::vector<int64_t> batch_limits(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                           const CountOrFraction& limit, const char* option);
  /// A LibTorch error (c10::Error) of the failed stage as one clear
  /// std::runtime_error: where it happened (RunContext::at()) and torch's message
  /// without its backtrace. Any other exception as it is.
  std::exception_ptr with_context(std::exception_ptr error) const;
  /// Starts the other local ranks when no launcher did (see the class comment).
  void launch_peers(const Platform& platform);
  /// Makes the strategy, the run context, the loops and the connectors.
  void build(const Platform& platform);
  /// At the first run of a Trainer that starts its own ranks: starts them,
  /// then build()s on the launched environment.
  void start_ranks();

  TrainerOptions options_;  // as given, resolved again once the ranks are started
  TrainerConfig config_;
  /// What the first run launches the other ranks from (needs_launch only).
  Platform launch_platform_;
  std::unique_ptr<Strategy> strategy_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
  std::vector<std::shared_ptr<Logger>> loggers_;
  std::unique_ptr<FitLoop> fit_loop_;
  std::unique_ptr<EvaluationLoop> validate_loop_;
  std::unique_ptr<EvaluationLoop> test_loop_;
  std::unique_ptr<PredictLoop> predict_loop_;
  std::unique_ptr<CheckpointConnector> checkpoint_connector_;
  std::unique_ptr<Profiler> profiler_;
  std::unique_ptr<HookDispatcher> hooks_;
  std::unique_ptr<LoggerConnector> logging_;
  /// The checkpoint fit() resumes from, between loading and restoring.
  std::optional<c10::impl::GenericDict> resume_checkpoint_;
  std::string resume_source_;
  /// The module of the last run, for save_checkpoint() after it.
  LightningModule* last_module_ = nullptr;

  std::unique_ptr<ModuleRuntimeConnector> runtime_;
  std::shared_ptr<DataLoader> train_dataloader_;
  std::unique_ptr<SignalConnector> signals_;  // installs its handlers during runs only
  std::vector<OptimizerConfig> no_optimizers_;  // optimizers() before the first run
  /// What the loops and connectors run on.
  std::unique_ptr<RunContext> context_;
  /// The program's launcher, or this Trainer's own when it was given none
  /// (joined by exit_code(), stopped on the error path).
  std::shared_ptr<SubprocessLauncher> launcher_;
  /// The signal of the StopSignalError the last fit threw (0: none).
  int stop_error_signal_ = 0;
};

}  // namespace fulgur
