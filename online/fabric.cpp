#include <fulgur/online/fabric.hpp>

#include <fulgur/modules/scoped_metric_sink.hpp>
#include <fulgur/modules/scoped_module_runtime.hpp>
#include <fulgur/online/fabric_runtime.hpp>
#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>
#include <fulgur/engine/checkpoint/checkpoint_writer.hpp>
#include <fulgur/engine/checkpoint/local_state.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/engine/checkpoint/training_checkpoint.hpp>
#include <fulgur/engine/checkpoint/scheduler_state.hpp>
#include <fulgur/strategies/create_strategy.hpp>
#include <fulgur/engine/step_engine.hpp>
#include <fulgur/trainer/optimizer_checks.hpp>
#include <fulgur/version.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <optional>
#include <stdexcept>

namespace fulgur {

Fabric::Fabric(TrainerOptions options, std::vector<std::shared_ptr<Logger>> loggers, std::optional<Platform> given)
    // With mpi_communicator set, the run's ranks are that communicator's.
    : config_(TrainerConfig::resolve(
          options, *(given = Platform::for_options(given ? std::move(*given) : Platform::detect_for(options), options)))),
      loggers_(std::move(loggers)) {
  const Platform& platform = *given;
  if (const int64_t pp = config_.options.model_parallel().pipeline_parallel_size();
      config_.strategy == StrategyKind::ModelParallel && pp > 1) {
    throw std::invalid_argument(fmt::format(
        "[Fabric] model_parallel.pipeline_parallel_size {}: a pipeline runs a step's micro-batches itself, which "
        "training_loss and backward cannot; train a pipeline with the Trainer, or set pipeline_parallel_size 1",
        pp));
  }
  if (config_.needs_launch) {
    throw std::invalid_argument(fmt::format(
        "[Fabric] the options ask for {} processes but {} runs: a Fabric starts no processes; launch the "
        "program with mpirun, srun or torchrun",
        config_.world_size, platform.world_size_source));
  }
  strategy_ = create_strategy(config_.strategy_spec(platform));
  writer_ = std::make_unique<CheckpointWriter>(*strategy_, config_.options.async_checkpoint());
  runtime_ = std::make_unique<FabricRuntime>(*this);
}

Fabric::~Fabric() {
  // What was logged reaches its files (CSVLogger keeps rows until then).
  if (module_ != nullptr && is_global_zero()) {
    for (auto& logger : loggers_) {
      try {
        logger->finalize("success");
      } catch (const std::exception& e) {
        std::cerr << "fulgur: warning: a logger could not write its files: " << e.what() << std::endl;
      }
    }
  }
  writer_->finish_writes_quietly();  // the last checkpoint is on disk before the process group goes
  sink_.reset();
  attached_.reset();
  if (module_ != nullptr) {
    try {
      strategy_->teardown();
    } catch (...) {  // a destructor: the process group may already be gone
    }
  }
}

void Fabric::setup(LightningModule& module) {
  if (module_ != nullptr) throw std::logic_error("[Fabric::setup] a Fabric sets up one module");
  run_.emplace(RunSettings::Wanted{});
  strategy_->setup_environment();
  attached_ = std::make_unique<ScopedModuleRuntime>(module, *runtime_);
  sink_ = std::make_unique<ScopedMetricSink>(module, runtime_.get());
  module_ = &module;
  strategy_->configure_model(module);  // the Trainer's order: the plan before the device and the optimizers
  strategy_->setup(module);
  module.train();
  optimizers_ = module.resolved_optimizers().entries();
  // The Trainer's checks; several optimizers are fine here (optimizer_step(i) steps each).
  check_optimizer_configs(optimizers_, /*automatic=*/false, !module.automatic_optimization(), config_,
                          "[Fabric::setup]");
  for (size_t i = 0; i < optimizers_.size(); ++i) {
    strategy_->setup_optimizers(*optimizers_[i].optimizer);
    lightning_optimizers_.push_back(
        std::make_shared<LightningOptimizer>(optimizers_[i].optimizer, i, static_cast<ModuleRuntime*>(runtime_.get())));
  }
}

LightningModule& Fabric::module() {
  if (module_ == nullptr) throw std::logic_error("[Fabric] no module: call setup(module) first");
  return *module_;
}

Batch Fabric::to_device(const Batch& batch) const { return strategy_->batch_to_device(batch); }

torch::Tensor Fabric::training_loss(const Batch& batch) {
  LightningModule& m = module();
  const Batch on_device = to_device(batch);
  strategy_->before_training_step();
  torch::Tensor loss;
  {
    Precision::AutocastScope autocast(strategy_->precision());
    loss = m.training_step(on_device, steps_.value());
  }
  StepEngine::check_loss(loss, "[Fabric::training_loss]", fmt::format("step {}", steps_.value()));
  return loss;
}

void Fabric::backward(const torch::Tensor& loss) {
  module();  // set up
  StepEngine::backward(*strategy_, *runtime_, loss);
}

bool Fabric::optimizer_step(size_t index) {
  module();  // set up
  if (index >= optimizers_.size()) {
    throw std::out_of_range(
        fmt::format("[Fabric::optimizer_step] optimizer {} does not exist; there are {}", index, optimizers_.size()));
  }
  const bool stepped =
      StepEngine::optimizer_step(*strategy_, *runtime_, *optimizers_[index].optimizer, config_.gradient_clip());
  StepEngine::after_optimizer_step(
      optimizers_[index], /*zero_grad=*/true, steps_,
      [this](int64_t) { flush_logged(); },  // a plateau scheduler watches what this step logged
      [this](const LRSchedulerConfig& config) { step_scheduler(config); });
  return stepped;
}

void Fabric::step_scheduler(const LRSchedulerConfig& config) {
  StepEngine::step_scheduler(config, *strategy_, metrics_, "[Fabric]");
}

torch::Tensor Fabric::training_step(const Batch& batch) {
  if (optimizers_.size() != 1) {
    throw std::logic_error(fmt::format(
        "[Fabric::training_step] steps one optimizer, and configure_optimizers returned {}; step each with "
        "training_loss(batch), backward(loss) and optimizer_step(index)",
        optimizers_.size()));
  }
  const torch::Tensor loss = training_loss(batch);
  backward(loss);
  optimizer_step(0);
  return loss.detach();
}

void Fabric::end_epoch() {
  ++epochs_;
  save_logs();
  for (auto& entry : optimizers_) {
    const auto& scheduler = entry.lr_scheduler;
    if (scheduler && scheduler->interval == Interval::Epoch && epochs_ % scheduler->frequency == 0) {
      step_scheduler(*scheduler);
    }
  }
}

torch::Tensor Fabric::all_reduce(const torch::Tensor& tensor, ReduceOp op) {
  if (world_size() == 1) return tensor.detach().clone();
  return strategy_->all_reduce(tensor, op);
}

torch::Tensor Fabric::broadcast(const torch::Tensor& tensor, int64_t source_rank) {
  return strategy_->broadcast(tensor, source_rank);
}

void Fabric::barrier(const std::string& name) { strategy_->barrier(name); }

int64_t Fabric::global_rank() const { return strategy_->global_rank(); }

int64_t Fabric::world_size() const { return strategy_->world_size(); }

torch::Device Fabric::device() const { return strategy_->root_device(); }

void Fabric::log(const std::string& name, double value) { log_dict({{name, value}}); }

void Fabric::log_dict(const std::map<std::string, double>& values) {
  for (const auto& [name, value] : values) metrics_[name] = value;
  send(values);
}

void Fabric::send(const std::map<std::string, double>& values) {
  if (!is_global_zero() || values.empty()) return;
  for (auto& logger : loggers_) logger->log_metrics(values, steps_.value());
}

void Fabric::save_logs() {
  if (!is_global_zero()) return;
  for (auto& logger : loggers_) logger->save();
}

void Fabric::flush_logged() {
  const std::map<std::string, double> values = runtime_->take_logged();
  for (const auto& [name, value] : values) metrics_[name] = value;  // a plateau scheduler may watch them
  if (steps_.value() % config_.options.log_every_n_steps() == 0) send(values);
}

namespace {

std::vector<const torch::optim::Optimizer*> optimizer_pointers(const std::vector<OptimizerConfig>& configs) {
  std::vector<const torch::optim::Optimizer*> out;
  for (const auto& config : configs) out.push_back(config.optimizer.get());
  return out;
}

}  // namespace

void Fabric::save_checkpoint(const std::filesystem::path& path, const Checkpoint& extra) {
  LightningModule& m = module();
  writer_->save(path, m, optimizer_pointers(optimizers_), [&] {
    Checkpoint c = training_state(/*copy=*/false);
    for (const auto& entry : extra) c.insert_or_assign(entry.key(), entry.value());
    return c;
  });
}

void Fabric::write_checkpoint(const std::filesystem::path& path, const Checkpoint& extra) const {
  if (strategy_->shards_parameters() || strategy_->shards_optimizer_state()) {
    throw std::logic_error(
        "[Fabric::write_checkpoint] a rank alone holds only its part of the state under a strategy that splits "
        "it (fsdp, a model_parallel mesh's tp); every rank calls save_checkpoint");
  }
  if (module_ == nullptr) throw std::logic_error("[Fabric] no module: call setup(module) first");
  Checkpoint c = training_state(/*copy=*/false);
  for (const auto& entry : extra) c.insert_or_assign(entry.key(), entry.value());
  writer_->save_alone(c, path, /*quiet=*/false);
}

void Fabric::finish_checkpoint_writes() { writer_->finish_writes(); }

namespace {

// A deep copy: what a later load overwrites in place must not change it.
c10::IValue copied(const c10::IValue& value) {
  if (value.isTensor()) return value.toTensor().detach().clone();
  if (value.isGenericDict()) {
    const auto dict = value.toGenericDict();
    c10::impl::GenericDict out(dict.keyType(), dict.valueType());
    for (const auto& entry : dict) out.insert(entry.key(), copied(entry.value()));
    return out;
  }
  if (value.isList()) {
    const auto list = value.toList();
    c10::impl::GenericList out(list.elementType());
    for (const auto& item : list) out.push_back(copied(item));
    return out;
  }
  return value;
}

}  // namespace

Checkpoint Fabric::training_state(bool copy) const {
  // The Trainer's writer: a Fabric checkpoint loads where a Trainer's does.
  const Checkpoint c = training_checkpoint(*module_, optimizers_, strategy_->precision(), /*epoch=*/0, steps_.value(),
                                           /*weights_only=*/false);
  return copy ? copied(c).toGenericDict() : c;
}

Checkpoint Fabric::load_checkpoint(const std::filesystem::path& path) {
  module();  // set up
  const std::string source = path.string();
  writer_->finish_writes();  // an asynchronous save of this path is on disk first
  Checkpoint c = load_whole_checkpoint(path);  // a sharded one joined
  for (const char* key : {"global_step", "state_dict", "optimizer_states", "lr_schedulers", "precision"}) {
    if (!c.contains(key)) throw CheckpointError(fmt::format("[Fabric::load_checkpoint] {} has no '{}'", source, key));
  }
  // A load that fails part-way changes nothing: the state it found is put back.
  const Checkpoint kept = training_state(/*copy=*/true);
  try {
    restore(c, source, /*whole=*/true);
  } catch (...) {
    restore(kept, "the state before the failed load", /*whole=*/false);
    throw;
  }
  return c;
}

void Fabric::restore(const Checkpoint& c, const std::string& source, bool whole) {
  LightningModule& m = *module_;
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& entry : c.at("state_dict").toGenericDict()) {
    weights.insert(entry.key().toStringRef(), entry.value().toTensor());
  }
  try {
    const auto optimizers = c.at("optimizer_states").toList();
    if (optimizers.size() != optimizers_.size()) {
      throw std::invalid_argument(
          fmt::format("it holds {} optimizer states, the model has {}", optimizers.size(), optimizers_.size()));
    }
    load_state_dict(m, whole ? local_weights(*strategy_, m, weights) : weights, /*strict=*/true);
    const auto schedulers = c.at("lr_schedulers").toList();
    size_t next_scheduler = 0;
    for (size_t i = 0; i < optimizers_.size(); ++i) {
      const auto saved = optimizers.get(i).toGenericDict();
      if (whole) {
        load_local_optimizer_state(*strategy_, *optimizers_[i].optimizer, saved);
      } else if (strategy_->shards_optimizer_state()) {  // this rank's rows, as kept
        load_optimizer_state_dict(*optimizers_[i].optimizer, saved,
                                  [&](const torch::Tensor& p) { return strategy_->local_tensor(p, p.detach()); });
      } else {
        load_optimizer_state_dict(*optimizers_[i].optimizer, saved);
      }
      if (optimizers_[i].lr_scheduler && next_scheduler < schedulers.size()) {
        load_scheduler_state_dict(*optimizers_[i].lr_scheduler, schedulers.get(next_scheduler++).toGenericDict(), source);
      }
    }
    strategy_->precision().load_state_dict(c.at("precision").toGenericDict());
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("[Fabric::load_checkpoint] {}: {}", source, e.what()));
  }
  steps_.restore(c.at("global_step").toInt());
}

}  // namespace fulgur
