#include <fulgur/trainer/checkpoint/checkpoint_connector.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/version.hpp>
#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>
#include <fulgur/engine/checkpoint/local_state.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/engine/checkpoint/pipeline_checkpoint.hpp>
#include <fulgur/engine/checkpoint/scheduler_state.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>
#include <fulgur/engine/checkpoint/training_checkpoint.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/trainer/loops/fit_loop.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <fmt/format.h>
#include <torch/cuda.h>

#include <algorithm>
#include <iostream>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

Dict require_dict(const Checkpoint& checkpoint, const std::string& key, const std::string& source) {
  if (!checkpoint.contains(key) || !checkpoint.at(key).isGenericDict()) {
    throw CheckpointError(fmt::format("[CheckpointConnector] {} has no '{}' section{}", source, key,
                                      key == "loops" ? " (it holds weights only and cannot resume training)" : ""));
  }
  return checkpoint.at(key).toGenericDict();
}

}  // namespace

Checkpoint CheckpointConnector::dump(bool weights_only) {
  const Dict loops = fit_loop_.state_dict();
  Checkpoint c = training_checkpoint(context_.module(), context_.optimizers(), context_.strategy().precision(),
                                     loops.at("epoch").toInt(), context_.global_step(), weights_only);
  c.insert(kRunIdentityKey, context_.run_identity());
  if (weights_only) return c;

  Dict loop_states = new_state_dict();
  loop_states.insert("fit_loop", loops);
  c.insert("loops", loop_states);
  Dict loader = new_state_dict();
  loader.insert("epoch", loops.at("epoch"));
  loader.insert("first_batch", loops.at("batch_in_epoch"));
  c.insert("loader", loader);

  Dict rng = new_state_dict();
  rng.insert("torch", at::detail::getDefaultCPUGenerator().get_state());
  List cuda(c10::AnyType::get());
  if (torch::cuda::is_available()) {
    for (int64_t i = 0; i < static_cast<int64_t>(torch::cuda::device_count()); ++i) {
      cuda.push_back(at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, i)).get_state());
    }
  }
  rng.insert("cuda", cuda);
  c.insert("rng_states", rng);

  Dict callbacks = new_state_dict();
  for (const auto& callback : context_.callbacks()) {
    Dict state = new_state_dict();
    for (const auto& [key, value] : callback->state_dict()) state.insert(key, value);
    callbacks.insert(callback->state_key(), state);
  }
  c.insert("callbacks", callbacks);
  Dict loggers = new_state_dict();
  for (const auto& logger : context_.loggers()) {
    Dict state = new_state_dict();
    for (const auto& [key, value] : logger->state_dict()) state.insert(key, value);
    loggers.insert(logger->name(), state);
  }
  c.insert("loggers", loggers);
  return c;
}

CheckpointConnector::CheckpointConnector(RunContext& context, FitLoop& fit_loop)
    : context_(context), fit_loop_(fit_loop), writer_(context.strategy(), context.config().options.async_checkpoint()) {}

CheckpointConnector::~CheckpointConnector() = default;  // the writer waits for a write in flight

std::vector<const torch::optim::Optimizer*> CheckpointConnector::optimizers() const {
  std::vector<const torch::optim::Optimizer*> out;
  for (const auto& config : context_.optimizers()) out.push_back(config.optimizer.get());
  return out;
}

void CheckpointConnector::save(const std::filesystem::path& path, bool weights_only) {
  writer_.save(path, context_.module(), optimizers(), [&] { return dump(weights_only); });
}

void CheckpointConnector::save_alone(const std::filesystem::path& path, bool weights_only) {
  writer_.save_alone(dump(weights_only), path, /*quiet=*/context_.handling_exception());
}

void CheckpointConnector::restore_model(const Checkpoint& checkpoint, const std::string& source) {
  c10::Dict<std::string, torch::Tensor> weights = checkpoint_weights(checkpoint, source);
  Strategy& strategy = context_.strategy();
  if (strategy.device_mesh().spans("pp")) {  // this rank's stages
    weights = PipelineCheckpoint(strategy, context_.module(), {}).local_weights(weights);
  }
  weights = local_weights(strategy, context_.module(), weights);
  try {
    load_state_dict(context_.module(), weights, /*strict=*/true);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("[CheckpointConnector] {} does not fit the model: {}", source, e.what()));
  }
}

void CheckpointConnector::restore_loggers(const Checkpoint& checkpoint) {
  if (!checkpoint.contains("loggers") || !checkpoint.at("loggers").isGenericDict()) return;
  const Dict saved = checkpoint.at("loggers").toGenericDict();
  for (const auto& logger : context_.loggers()) {
    if (!saved.contains(logger->name()) || !saved.at(logger->name()).isGenericDict()) continue;
    std::map<std::string, int64_t> state;
    for (const auto& entry : saved.at(logger->name()).toGenericDict()) {
      if (entry.key().isString() && entry.value().isInt()) state[entry.key().toStringRef()] = entry.value().toInt();
    }
    logger->load_state_dict(state);
  }
}

void CheckpointConnector::restore_training_state(const Checkpoint& checkpoint, const std::string& source) {
  const Dict loops = require_dict(checkpoint, "loops", source);
  try {
    std::vector<OptimizerConfig>& configs = context_.optimizers();
    const auto optimizers = checkpoint.at("optimizer_states").toList();
    if (optimizers.size() != configs.size()) {
      throw CheckpointError(fmt::format("[CheckpointConnector] {} holds {} optimizer states, the model has {}", source,
                                        optimizers.size(), configs.size()));
    }
    const auto schedulers = checkpoint.at("lr_schedulers").toList();
    size_t next_scheduler = 0;
    std::optional<PipelineCheckpoint> pipeline;
    if (context_.strategy().device_mesh().spans("pp")) pipeline.emplace(context_.strategy(), context_.module(), this->optimizers());
    for (size_t i = 0; i < configs.size(); ++i) {
      Strategy& strategy = context_.strategy();
      Dict saved = optimizers.get(i).toGenericDict();
      if (pipeline) saved = pipeline->local_optimizer_state(i, saved);
      load_local_optimizer_state(strategy, *configs[i].optimizer, saved);
      if (!configs[i].lr_scheduler || next_scheduler >= schedulers.size()) continue;
      load_scheduler_state_dict(*configs[i].lr_scheduler, schedulers.get(next_scheduler++).toGenericDict(), source);
    }
    context_.strategy().precision().load_state_dict(checkpoint.at("precision").toGenericDict());
    fit_loop_.load_state_dict(loops.at("fit_loop").toGenericDict());

    const Dict callbacks = checkpoint.at("callbacks").toGenericDict();
    for (const auto& callback : context_.callbacks()) {
      if (!callbacks.contains(callback->state_key())) continue;
      CallbackState state;
      for (const auto& entry : callbacks.at(callback->state_key()).toGenericDict()) {
        state[entry.key().toStringRef()] = entry.value();
      }
      callback->load_state_dict(state);
    }

    const Dict rng = checkpoint.at("rng_states").toGenericDict();
    {
      auto generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      generator.set_state(rng.at("torch").toTensor());
    }
    const auto cuda = rng.at("cuda").toList();
    if (torch::cuda::is_available()) {
      const size_t devices = std::min<size_t>(cuda.size(), torch::cuda::device_count());
      for (size_t i = 0; i < devices; ++i) {
        auto generator = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(cuda.get(i).toTensor());
      }
    }
  } catch (const CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckpointError(
        fmt::format("[CheckpointConnector] cannot restore training state from {}: {}", source,
                    std::string(e.what()).substr(0, std::string(e.what()).find('\n'))));
  }
}

}  // namespace fulgur
