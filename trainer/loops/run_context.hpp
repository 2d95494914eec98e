#pragma once

#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/modules/stage.hpp>
#include <fulgur/engine/step_counter.hpp>
#include <fulgur/trainer/connectors/module_runtime_connector.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/loops/progress.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {

class CheckpointConnector;
class HookDispatcher;
class LoggerConnector;

/// What the loops, the connectors and the library's own callbacks run on:
/// the Trainer's parts (options, strategy, callbacks, loggers, profiler and
/// connectors) and the run's state (module, stage, progress, the one
/// optimizer-step counter). The Trainer builds it, attaches a module for each
/// run (run_stage) and reads its state for its public face; the loops never
/// call back into the Trainer. Callbacks never see it: what they need is the
/// Trainer's public read-only state.
class RunContext {
 public:
  /// The connectors the Trainer owns, handed over once they exist.
  struct Connectors {
    HookDispatcher& hooks;
    LoggerConnector& logging;
    SignalConnector& signals;
    ModuleRuntimeConnector& runtime;
    CheckpointConnector& checkpoints;
  };

  RunContext(const TrainerConfig& config, Strategy& strategy, const std::vector<std::shared_ptr<Callback>>& callbacks,
             const std::vector<std::shared_ptr<Logger>>& loggers, Profiler* profiler)
      : config_(config),
        strategy_(strategy),
        callbacks_(callbacks),
        loggers_(loggers),
        profiler_(profiler),
        accumulate_grad_batches_(config.options.accumulate_grad_batches()) {}
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  void connect(const Connectors& connectors) { connectors_.emplace(connectors); }

  // --- the Trainer's parts ---------------------------------------------------------
  const TrainerConfig& config() const { return config_; }
  Strategy& strategy() const { return strategy_; }
  bool is_global_zero() const { return strategy_.is_global_zero(); }
  const std::vector<std::shared_ptr<Callback>>& callbacks() const { return callbacks_; }
  const std::vector<std::shared_ptr<Logger>>& loggers() const { return loggers_; }
  /// The run folder: the first logger's log_dir, else default_root_dir.
  std::filesystem::path log_dir() const {
    if (!loggers_.empty()) return loggers_.front()->log_dir();
    return config_.options.default_root_dir();
  }
  /// The `profiler` option's Profiler, or nullptr when profiling is off.
  Profiler* profiler() const { return profiler_; }
  HookDispatcher& hooks() const { return connectors_->hooks; }
  LoggerConnector& logging() const { return connectors_->logging; }
  SignalConnector& signals() const { return connectors_->signals; }
  /// SignalConnector::check(), once the connectors are there.
  void check_signals() const {
    if (connectors_) connectors_->signals.check();
  }
  CheckpointConnector& checkpoints() const { return connectors_->checkpoints; }
  /// The optimizers (each with its scheduler) of the running or last fit.
  std::vector<OptimizerConfig>& optimizers() const { return connectors_->runtime.optimizer_configs(); }

  // --- the run ---------------------------------------------------------------------
  /// The entry point running (run_stage sets it); nullopt between runs.
  std::optional<Stage> stage() const { return stage_; }
  void set_stage(std::optional<Stage> stage) { stage_ = stage; }
  /// The module of the run (null between runs; save_checkpoint after a run
  /// attaches the last one while it writes).
  void attach_module(LightningModule* module) { module_ = module; }
  bool has_module() const { return module_ != nullptr; }
  /// The attached module; throws outside a run.
  LightningModule& module() const {
    if (module_ == nullptr) throw std::logic_error("[RunContext::module] no LightningModule is attached outside a run");
    return *module_;
  }
  /// True while fit checks its validation loop before training.
  bool sanity_checking() const { return sanity_checking_; }
  void set_sanity_checking(bool checking) { sanity_checking_ = checking; }
  /// True while on_exception and teardown run after a failure: no collective
  /// may be started then (a peer may be gone).
  bool handling_exception() const { return handling_exception_; }
  void set_handling_exception(bool handling) { handling_exception_ = handling; }
  /// What checkpoints of this run record to tell them from other runs'.
  const std::string& run_identity() const { return run_identity_; }
  void set_run_identity(std::string identity) { run_identity_ = std::move(identity); }

  /// Optimizer steps taken so far: the one counter (engine/), counted by
  /// StepEngine::after_optimizer_step after every step of either
  /// optimization mode and restored from a checkpoint on resume.
  StepCounter& steps() { return steps_; }
  int64_t global_step() const { return steps_.value(); }
  /// Epochs: the index of the one running, or the number completed between epochs.
  int64_t current_epoch() const { return epoch_progress_.total; }
  Progress& epoch_progress() { return epoch_progress_; }
  const Progress& epoch_progress() const { return epoch_progress_; }
  /// Batches of the evaluation loop running now (validation, test or sanity check).
  int64_t num_eval_batches() const { return num_eval_batches_; }
  void set_num_eval_batches(int64_t batches) { num_eval_batches_ = batches; }

  /// Batches per optimizer step in the running epoch; starts at the
  /// accumulate_grad_batches option, GradientAccumulationScheduler changes it.
  int64_t accumulate_grad_batches() const { return accumulate_grad_batches_; }
  void set_accumulate_grad_batches(int64_t batches) {
    if (batches < 1) {
      throw std::invalid_argument(
          fmt::format("[RunContext::set_accumulate_grad_batches] expected a count >= 1, got {}", batches));
    }
    accumulate_grad_batches_ = batches;
  }

  /// Asks training to stop after the current step (Trainer::request_stop).
  void request_stop() { should_stop_ = true; }
  bool should_stop() const { return should_stop_; }
  /// The signal that stopped the last fit, agreed by every rank; 0: none.
  int stop_signal() const { return connectors_->signals.stop_signal(); }
  /// Whether the ranks agree on stopping after this optimizer step: every
  /// step with one process; with more, every stop_check_every_n_steps
  /// optimizer steps and at an epoch's last batch (a collective and a host
  /// read, kept off the other steps). Every rank computes the same answer.
  bool stop_check_due(bool last_batch_of_epoch) const {
    if (strategy_.world_size() == 1 || last_batch_of_epoch) return true;
    return global_step() % config_.options.stop_check_every_n_steps() == 0;
  }

  /// The loops say what runs (a step or hook, a string literal) and its
  /// batch (-1: none): a LibTorch error thrown there names it.
  void at(const char* where, int64_t batch = -1) {
    where_ = where;
    where_batch_ = batch;
  }
  const char* where() const { return where_; }
  int64_t where_batch() const { return where_batch_; }

 private:
  const TrainerConfig& config_;
  Strategy& strategy_;
  const std::vector<std::shared_ptr<Callback>>& callbacks_;
  const std::vector<std::shared_ptr<Logger>>& loggers_;
  Profiler* profiler_;
  std::optional<Connectors> connectors_;

  LightningModule* module_ = nullptr;
  std::optional<Stage> stage_;
  bool sanity_checking_ = false;
  bool handling_exception_ = false;
  bool should_stop_ = false;
  std::string run_identity_;
  StepCounter steps_;
  Progress epoch_progress_;
  int64_t num_eval_batches_ = 0;
  int64_t accumulate_grad_batches_ = 1;
  const char* where_ = nullptr;  // see at()
  int64_t where_batch_ = -1;
};

}  // namespace fulgur
