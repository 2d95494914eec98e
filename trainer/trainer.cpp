#include <fulgur/trainer/trainer.hpp>

#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/callbacks/model_summary.hpp>
#include <fulgur/trainer/profilers/pytorch_profiler.hpp>
#include <fulgur/trainer/profilers/simple_profiler.hpp>
#include <fulgur/callbacks/progress_bar.hpp>
#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/launchers/subprocess_launcher.hpp>
#include <fulgur/modules/scoped_module_runtime.hpp>
#include <fulgur/strategies/sharding/sharded_unit_hooks.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_connector.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_locator.hpp>
#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>
#include <fulgur/trainer/loops/evaluation_loop.hpp>
#include <fulgur/trainer/loops/fit_loop.hpp>
#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/hparams_yaml.hpp>
#include <fulgur/trainer/connectors/module_runtime_connector.hpp>
#include <fulgur/trainer/openmp_wait_policy.hpp>
#include <fulgur/trainer/loops/predict_loop.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>
#include <fulgur/trainer/run_identity.hpp>
#include <fulgur/trainer/run_settings.hpp>
#include <fulgur/trainer/slurm_requeue.hpp>

#include <c10/util/Type.h>
#include <fmt/format.h>

#include <csignal>
#include <cstring>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <typeinfo>

namespace fulgur {

Trainer::Trainer(TrainerOptions options, std::vector<std::shared_ptr<Callback>> callbacks,
                 std::vector<std::shared_ptr<Logger>> loggers, std::optional<Platform> given,
                 std::shared_ptr<SubprocessLauncher> launcher)
    : options_(options),
      // With mpi_communicator set, the run's ranks are that communicator's.
      config_(TrainerConfig::resolve(
          options, *(given = Platform::for_options(given ? std::move(*given) : Platform::detect_for(options), options)))),
      callbacks_(std::move(callbacks)),
      loggers_(std::move(loggers)),
      signals_(std::make_unique<SignalConnector>()),  // reads FULGUR_SIGNAL_GRACE_S; installs nothing
      launcher_(std::move(launcher)) {
  // Options are resolved and checked here; nothing in the process changes
  // (no handler, thread, child process or LibTorch setting) before a run.
  for (const auto& callback : callbacks_) {
    if (!callback) throw std::invalid_argument("[Trainer::Trainer] a callback is null");
  }
  for (const auto& logger : loggers_) {
    if (!logger) throw std::invalid_argument("[Trainer::Trainer] a logger is null");
  }
  Platform& platform = *given;
  // The program's next Trainer: this process is rank 0 of the ranks its launcher started.
  if (launcher_ && launcher_->launched()) {
    platform = Platform::detect_for(options, launcher_->environment());
    config_ = TrainerConfig::resolve(options, platform);
  }
  if (!platform.environment || platform.environment->global_rank() == 0) {
    for (const auto& warning : platform.warnings) std::cerr << "fulgur: warning: " << warning << std::endl;
  }
  // The OpenMP policy of a running process cannot change: only the ranks a run launches get the passive one.
  if (config_.options.openmp_wait_policy() == OpenMPWaitPolicy::Passive) warn_without_passive_openmp_wait();

  if (!config_.options.logger()) {
    loggers_.clear();
  } else if (loggers_.empty()) {
    loggers_.push_back(std::make_shared<CSVLogger>(config_.options.default_root_dir()));
  }
  const bool has_progress_bar = std::any_of(callbacks_.begin(), callbacks_.end(), [](const auto& c) {
    return dynamic_cast<ProgressBar*>(c.get()) != nullptr;
  });
  if (config_.options.enable_progress_bar() && !has_progress_bar) {
    callbacks_.push_back(std::make_shared<ProgressBar>());
  }
  const bool has_model_summary = std::any_of(callbacks_.begin(), callbacks_.end(), [](const auto& c) {
    return dynamic_cast<ModelSummary*>(c.get()) != nullptr;
  });
  if (config_.options.enable_model_summary() && !has_model_summary) {
    callbacks_.push_back(std::make_shared<ModelSummary>());
  }
  if (const auto& profiler = config_.options.profiler()) {
    switch (*profiler) {
      case ProfilerKind::Simple: profiler_ = std::make_unique<SimpleProfiler>(); break;
      case ProfilerKind::PyTorch: profiler_ = std::make_unique<PyTorchProfiler>(); break;
    }
  }
  const bool has_model_checkpoint = std::any_of(callbacks_.begin(), callbacks_.end(), [](const auto& c) {
    return dynamic_cast<ModelCheckpoint*>(c.get()) != nullptr;
  });
  // The default: <run folder>/checkpoints/last.ckpt after every epoch and when training stops.
  if (config_.options.enable_checkpointing() && !has_model_checkpoint) {
    callbacks_.push_back(std::make_shared<ModelCheckpoint>(ModelCheckpointOptions().save_last(true)));
  }
  // Ranks this Trainer starts itself are started by its first run (start_ranks).
  if (config_.needs_launch) {
    launch_platform_ = std::move(platform);
  } else {
    build(platform);
  }
}

void Trainer::build(const Platform& platform) {
  strategy_ = create_strategy(config_.strategy_spec(platform));
  // Held in a collective past the grace period: make it fail (the ranks this
  // process started first, since a Gloo wait ends only when its peer does).
  signals_->on_stuck(*strategy_, [strategy = strategy_.get(), launcher = launcher_](int signal) {
    strategy->abort_collectives();
    if (launcher) launcher->terminate_peers(signal);
  });
  // Everything below runs on one context; only the hooks and the module's
  // runtime keep the Trainer, to hand it to callbacks and to trainer().
  context_ = std::make_unique<RunContext>(config_, *strategy_, callbacks_, loggers_, profiler_.get());
  hooks_ = std::make_unique<HookDispatcher>(*this, callbacks_, *context_);
  logging_ = std::make_unique<LoggerConnector>(*context_);
  fit_loop_ = std::make_unique<FitLoop>(*context_);
  validate_loop_ = std::make_unique<EvaluationLoop>(*context_, RunningStage::Validate);
  test_loop_ = std::make_unique<EvaluationLoop>(*context_, RunningStage::Test);
  predict_loop_ = std::make_unique<PredictLoop>(*context_);
  checkpoint_connector_ = std::make_unique<CheckpointConnector>(*context_, *fit_loop_);
  runtime_ = std::make_unique<ModuleRuntimeConnector>(*this, *context_);
  context_->connect({*hooks_, *logging_, *signals_, *runtime_, *checkpoint_connector_});
}

void Trainer::start_ranks() {
  if (context_) return;
  if (!launcher_) launcher_ = std::make_shared<SubprocessLauncher>();
  launch_peers(launch_platform_);
  try {
    const Platform platform = Platform::detect_for(options_, launcher_->environment());  // now a launched rank, as under torchrun
    config_ = TrainerConfig::resolve(options_, platform);
    build(platform);
  } catch (...) {
    launcher_->join(/*stop=*/true);  // they would wait for this rank
    throw;
  }
}

Trainer::~Trainer() {
  if (checkpoint_connector_) checkpoint_connector_->writer().finish_writes_quietly();
}

void Trainer::launch_peers(const Platform& platform) {
  LocalLauncherOptions launch(config_.devices);
  launch.num_nodes(config_.options.num_nodes()).node_rank(config_.options.node_rank());
  launch.passive_openmp(config_.options.openmp_wait_policy() != OpenMPWaitPolicy::Environment);
  // MASTER_ADDR / MASTER_PORT as the local environment read them.
  if (const auto& env = platform.environment) launch.main_address(env->main_address()).main_port(env->main_port());
  launcher_->launch(launch);
}

std::vector<OptimizerConfig>& Trainer::optimizers() { return context_ ? context_->optimizers() : no_optimizers_; }

void Trainer::request_stop() {
  if (!context_) throw std::logic_error("[Trainer::request_stop] no run has started");
  context_->request_stop();
}

std::filesystem::path Trainer::log_dir() const {
  if (!loggers_.empty()) return loggers_.front()->log_dir();
  return config_.options.default_root_dir();
}

Strategy& Trainer::strategy() {
  if (!strategy_) throw std::logic_error("[Trainer::strategy] the ranks this Trainer starts exist from its first run on");
  return *strategy_;
}

bool Trainer::is_global_zero() const { return global_rank() == 0; }

int64_t Trainer::global_rank() const { return strategy_ ? strategy_->global_rank() : 0; }

int64_t Trainer::world_size() const { return strategy_ ? strategy_->world_size() : config_.world_size; }

void Trainer::set_accumulate_grad_batches(int64_t batches) {
  if (!context_) throw std::logic_error("[Trainer::set_accumulate_grad_batches] no run has started");
  context_->set_accumulate_grad_batches(batches);
}

void Trainer::save_checkpoint(const std::filesystem::path& path, bool weights_only, std::function<void()> after_write) {
  if (context_ && context_->has_module() && context_->handling_exception()) {
    // A rank failed: the others may never join a collective, so rank 0 writes alone.
    if (is_global_zero()) checkpoint_connector_->save_alone(path, weights_only);
    if (after_write && is_global_zero()) checkpoint_connector_->writer().after_write(std::move(after_write));
    return;
  }
  if (context_ && context_->has_module()) {
    checkpoint_connector_->save(path, weights_only);
    if (after_write) checkpoint_connector_->writer().after_write(std::move(after_write));
    return;
  }
  if (last_module_ == nullptr) {
    throw std::logic_error("[Trainer::save_checkpoint] no model: call fit/validate/test/predict first");
  }
  // After a run: the process group may be gone, so rank 0 writes alone.
  context_->attach_module(last_module_);
  try {
    if (is_global_zero()) checkpoint_connector_->save_alone(path, weights_only);
  } catch (...) {
    context_->attach_module(nullptr);
    throw;
  }
  context_->attach_module(nullptr);
}

void Trainer::write_profile() {
  if (!profiler_) return;
  // Every rank's loggers have the version rank 0 claimed (LoggerConnector::claim_run_folder).
  const std::filesystem::path dir = log_dir();
  try {
    profiler_->write(dir, strategy_->global_rank());
  } catch (const std::exception& e) {
    std::cerr << "fulgur: warning: the profile was not written: " << e.what() << std::endl;
  }
}

void Trainer::setup_run(LightningModule& module) {
  context_->attach_module(&module);
  hooks_->start_run(profiler_.get(), module);
  last_module_ = &module;
  strategy_->setup_environment();
  strategy_->configure_model(module);
  if (config_.options.activation_checkpointing()) {
    bool any = false;
    for (const auto& child : module.modules(/*include_self=*/false)) {
      if (auto* unit = dynamic_cast<ShardedUnitBase*>(child.get())) {
        unit->set_activation_checkpointing(true);
        any = true;
      }
    }
    if (!any && is_global_zero()) {
      std::cerr << "warning: activation_checkpointing: the module has no fulgur::ShardedUnit, so nothing is "
                   "recomputed; wrap the blocks whose activations should not be kept"
                << std::endl;
    }
  }
  strategy_->setup(module);
}

template <class Body>
auto Trainer::run_stage(Stage stage, LightningModule& module, DataModule& data,
                        std::string ckpt_path, Body&& body) {
  start_ranks();
  // What the run changes in the process, put back on every path out (in reverse order).
  const RunSettings settings({config_.num_threads,
                              config_.options.deterministic() ? std::optional<bool>(true) : std::nullopt,
                              config_.options.benchmark()});
  struct EndRun {
    SignalConnector& signals;
    CheckpointConnector& checkpoints;
    ~EndRun() {
      checkpoints.writer().end_run();  // no writer thread outlives the run
      signals.end_run();
    }
  } end_run{*signals_, *checkpoint_connector_};
  signals_->begin_run(stage == Stage::Fit);
  context_->set_stage(stage);
  const ScopedModuleRuntime attached(module, *runtime_);  // detached on both paths out
  try {
    setup_run(module);
    context_->set_run_identity(fulgur::run_identity(hparams_to_yaml(module.hparams()), typeid(module).name()));
    // prepare_data runs once per node; the strategy orders it before setup.
    if (strategy_->local_rank() == 0) data.prepare_data();
    strategy_->barrier("prepare_data");
    data.setup(stage);
    if (ckpt_path.empty() && stage == Stage::Fit) {
      ckpt_path = CheckpointLocator(*this).auto_resume_path(context_->run_identity());
    }
    if (!ckpt_path.empty()) {
      // Every process reads the same file; weights first, and the loggers
      // before they write, so a resumed fit continues the same run folder.
      const std::filesystem::path path = CheckpointLocator(*this).resolve(ckpt_path);
      // A sharded one (any world size) becomes whole; each rank keeps its rows.
      Checkpoint checkpoint = load_whole_checkpoint(path);
      checkpoint_connector_->restore_model(checkpoint, path.string());
      if (stage == Stage::Fit) {
        checkpoint_connector_->restore_loggers(checkpoint);
        resume_checkpoint_ = checkpoint;
        resume_source_ = path.string();
      }
      if (is_global_zero()) std::cout << "fulgur: restored from checkpoint " << path.string() << std::endl;
    }
    logging_->claim_run_folder();     // after a restored run took back its own version
    logging_->start_loggers(module);  // only once the data are known to be there
    hooks_->call_callback_hook("setup", &Callback::setup);
    auto result = body();
    checkpoint_connector_->writer().finish_writes();  // the run's checkpoints are on disk when it returns
    hooks_->call_callback_hook("teardown", &Callback::teardown);
    write_profile();
    data.teardown(stage);
    if (is_global_zero()) {
      for (auto& logger : loggers_) logger->finalize("success");
    }
    strategy_->teardown();
    context_->set_stage(std::nullopt);
    context_->attach_module(nullptr);
    return result;
  } catch (...) {
    // The one exception path: tell callbacks, close loggers as failed, tear down.
    // A stop signal that no step boundary could act on makes the error a StopSignalError.
    const std::exception_ptr error = signals_->stop_error(with_context(std::current_exception()));
    try {
      std::rethrow_exception(error);
    } catch (const StopSignalError& e) {
      stop_error_signal_ = e.signal();
    } catch (...) {
    }
    context_->set_sanity_checking(false);
    context_->set_handling_exception(true);
    try {
      if (context_->has_module()) {
        hooks_->call_callback_hook("on_exception", &Callback::on_exception, error);
        checkpoint_connector_->writer().finish_writes_quietly();
        hooks_->call_callback_hook("teardown", &Callback::teardown);
        write_profile();
      }
      if (is_global_zero()) {
        for (auto& logger : loggers_) logger->finalize("failed");
      }
      strategy_->teardown();
      resume_checkpoint_.reset();
      // The other ranks may wait for this one in a collective: stop them.
      if (launcher_) launcher_->join(/*stop=*/true);
    } catch (const std::exception& cleanup_error) {
      std::cerr << "fulgur: error while cleaning up after a failure: " << cleanup_error.what() << std::endl;
    }
    context_->set_handling_exception(false);
    context_->set_stage(std::nullopt);
    context_->attach_module(nullptr);
    std::rethrow_exception(error);
  }
}

std::vector<std::shared_ptr<DataLoader>> Trainer::prepare_loaders(
    const std::vector<std::shared_ptr<DataLoader>>& loaders) {
  std::vector<std::shared_ptr<DataLoader>> prepared;
  for (size_t i = 0; i < loaders.size(); ++i) {
    if (!loaders[i]) throw std::invalid_argument(fmt::format("[Trainer] the DataModule's loader {} is null", i));
    prepared.push_back(prepare_loader(loaders[i], /*training=*/false));
  }
  return prepared;
}

std::vector<int64_t> Trainer::batch_limits(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                           const CountOrFraction& limit, const char* option) {
  std::vector<int64_t> limits;
  for (const auto& loader : loaders) limits.push_back(limit.limit(loader->size(), option));
  return limits;
}

std::exception_ptr Trainer::with_context(std::exception_ptr error) const {
  auto message = [&](const c10::Error& e) {
    const RunContext& run = *context_;
    const std::string stage = run.stage() ? to_string(*run.stage()) : "run";
    std::string where = run.where() != nullptr ? run.where() : "the run";
    if (run.where_batch() >= 0) where += fmt::format(" at batch {}", run.where_batch());
    if (run.sanity_checking()) {
      where += " of the sanity check (num_sanity_val_steps, before training)";
    } else if (run.stage() == Stage::Fit) {
      where += fmt::format(" of epoch {}", run.current_epoch());
    }
    return fmt::format("[Trainer::{}] rank {}: {} failed: {}", stage, global_rank(), where, e.what_without_backtrace());
  };
  try {
    std::rethrow_exception(error);
  } catch (const c10::OutOfMemoryError& e) {
    // Stays an out-of-memory error: callers (scale_batch_size, a user's retry) catch it by type.
    return std::make_exception_ptr(
        c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, message(e)));
  } catch (const c10::Error& e) {
    return std::make_exception_ptr(std::runtime_error(message(e)));
  } catch (...) {
    return error;
  }
}

std::shared_ptr<DataLoader> Trainer::prepare_loader(std::shared_ptr<DataLoader> loader, bool training) {
  if (loader) loader->set_device(strategy_->root_device());
  if (loader && strategy_->world_size() > 1 && config_.options.use_distributed_sampler()) {
    // Rank 0's draw becomes everyone's shuffle seed, so the shares never
    // overlap (and the ranks of a tp x cp block draw the same batches).
    const torch::Tensor draw = torch::randint(0, std::numeric_limits<int32_t>::max(), {1}, torch::kInt64);
    DataLoader::Shard shard;
    shard.rank = strategy_->data_parallel_rank();
    shard.num_replicas = strategy_->data_parallel_size();
    shard.seed = static_cast<uint64_t>(strategy_->broadcast(draw, 0).item<int64_t>());
    shard.pad = training;
    loader->shard(shard);
  }
  return loader;
}

void Trainer::fit(LightningModule& module, DataModule& data, const std::string& ckpt_path) {
  stop_error_signal_ = 0;
  bool requeue = false;
  run_stage(Stage::Fit, module, data, ckpt_path, [&] {
    auto train = prepare_loader(data.train_dataloader(), /*training=*/true);
    if (!train) throw std::invalid_argument("[Trainer::fit] the DataModule returned no train_dataloader");
    train_dataloader_ = train;
    const auto val = prepare_loaders(data.val_dataloaders());
    runtime_->set_optimizers(module.resolved_optimizers());
    module.train();
    hooks_->call_hook("on_fit_start", &Callback::on_fit_start, &LightningModule::on_fit_start);

    // A resumed run was checked when it started: no sanity check.
    if (!val.empty() && config_.options.num_sanity_val_steps() != 0 && !resume_checkpoint_) {
      std::vector<int64_t> steps = batch_limits(val, config_.options.limit_val_batches(), "limit_val_batches");
      const int64_t sanity = config_.options.num_sanity_val_steps();
      int64_t total = 0;
      for (int64_t& count : steps) {
        if (sanity != -1) count = std::min(count, sanity);
        total += count;
      }
      // Every rank runs it if any has a batch: evaluation shards are not padded.
      if (strategy_->max_over_ranks(total) > 0) {
        context_->set_sanity_checking(true);
        hooks_->call_callback_hook("on_sanity_check_start", &Callback::on_sanity_check_start);
        fit_loop_->epoch_loop().val_loop().run(val, steps, /*sanity_check=*/true);
        hooks_->call_callback_hook("on_sanity_check_end", &Callback::on_sanity_check_end);
        context_->set_sanity_checking(false);
      }
    }
    if (resume_checkpoint_) {
      // Last, so that nothing between here and the first step draws from the restored RNG.
      checkpoint_connector_->restore_training_state(*resume_checkpoint_, resume_source_);
      resume_checkpoint_.reset();
    }
    fit_loop_->run(*train, val);
    hooks_->call_hook("on_fit_end", &Callback::on_fit_end, &LightningModule::on_fit_end);
    checkpoint_connector_->writer().finish_writes();  // before any rank may exit on a signal stop
    if (signals_->stop_signal() != 0) {
      // No rank leaves before every rank has run its end hooks (the
      // checkpoint is on disk): a launcher stops the others once one exits,
      // and a requeue ends this attempt. Only SIGUSR1, SLURM's time-limit
      // warning, requeues; SIGTERM is also what scancel sends, and a
      // cancelled job must stay cancelled.
      strategy_->barrier("signal stop");
      requeue = signals_->stop_signal() == SIGUSR1 && is_global_zero() && config_.options.auto_requeue();
    }
    return 0;
  });
  if (requeue) SlurmRequeue::requeue_current_job();
}

int Trainer::exit_code() {
  // The ranks this process started, if any: their failure is the run's too.
  const int peers = launcher_ ? launcher_->join() : 0;
  if (stop_error_signal_ != 0) return 128 + stop_error_signal_;
  return signals_->stop_signal() != 0 ? 128 + signals_->stop_signal() : peers;
}

std::map<std::string, double> Trainer::validate(LightningModule& module, DataModule& data,
                                               const std::string& ckpt_path) {
  return run_stage(Stage::Validate, module, data, ckpt_path, [&] {
    const auto val = prepare_loaders(data.val_dataloaders());
    if (val.empty()) throw std::invalid_argument("[Trainer::validate] the DataModule returned no val_dataloader");
    return validate_loop_->run(val, batch_limits(val, config_.options.limit_val_batches(), "limit_val_batches"));
  });
}

std::map<std::string, double> Trainer::test(LightningModule& module, DataModule& data, const std::string& ckpt_path) {
  return run_stage(Stage::Test, module, data, ckpt_path, [&] {
    const auto loaders = prepare_loaders(data.test_dataloaders());
    if (loaders.empty()) throw std::invalid_argument("[Trainer::test] the DataModule returned no test_dataloader");
    return test_loop_->run(loaders, batch_limits(loaders, config_.options.limit_test_batches(), "limit_test_batches"));
  });
}

std::vector<torch::Tensor> Trainer::predict(LightningModule& module, DataModule& data,
                                            const std::string& ckpt_path) {
  return run_stage(Stage::Predict, module, data, ckpt_path, [&] {
    const auto loaders = prepare_loaders(data.predict_dataloaders());
    if (loaders.empty()) throw std::invalid_argument("[Trainer::predict] the DataModule returned no predict_dataloader");
    return predict_loop_->run(loaders,
                              batch_limits(loaders, config_.options.limit_predict_batches(), "limit_predict_batches"));
  });
}

}  // namespace fulgur
