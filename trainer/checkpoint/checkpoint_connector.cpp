#include <fulgur/trainer/checkpoint/checkpoint_connector.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_error.hpp>
#include <fulgur/version.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_weights.hpp>
#include <fulgur/trainer/checkpoint/optimizer_state.hpp>
#include <fulgur/trainer/checkpoint/mesh_sharded_checkpoint.hpp>
#include <fulgur/trainer/checkpoint/pipeline_checkpoint.hpp>
#include <fulgur/trainer/checkpoint/scheduler_state.hpp>
#include <fulgur/trainer/checkpoint/sharded_checkpoint.hpp>
#include <fulgur/trainer/checkpoint/sharded_state_writer.hpp>
#include <fulgur/trainer/checkpoint/training_checkpoint.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/sharding/shard_layout.hpp>
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
    : context_(context), fit_loop_(fit_loop) {}

CheckpointConnector::~CheckpointConnector() { finish_writes_quietly(); }

bool CheckpointConnector::async() const { return context_.config().options.async_checkpoint(); }

AsyncCheckpointIO& CheckpointConnector::async_io() {
  if (!async_io_) async_io_ = std::make_unique<AsyncCheckpointIO>();
  return *async_io_;
}

std::vector<const torch::optim::Optimizer*> CheckpointConnector::optimizers() const {
  std::vector<const torch::optim::Optimizer*> out;
  for (const auto& config : context_.optimizers()) out.push_back(config.optimizer.get());
  return out;
}

void CheckpointConnector::save(const std::filesystem::path& path, bool weights_only) {
  Strategy& strategy = context_.strategy();
  std::string error;
  std::optional<Checkpoint> gathered;
  const ShardLayout* layout = strategy.shard_layout();
  if (layout == nullptr && strategy.sharded_state_dict()) {  // a mesh's parts, as the ranks hold them
    MeshShardedCheckpoint(strategy, context_.module(), optimizers()).save(dump(weights_only), path);
    return;
  }
  if (layout != nullptr || strategy.shards_parameters()) {
    const ShardedStateWriter writer(strategy, layout, context_.module(), optimizers());
    // Every rank dumps its state: the collectives pair up.
    if (strategy.sharded_state_dict()) {
      writer.save_sharded(dump(weights_only), path);
      return;
    }
    gathered = dump(weights_only);
    writer.gather_whole(*gathered);
  }
  if (strategy.device_mesh().spans("pp")) {  // rank 0 holds the first stage: the others' come to it
    if (!gathered) gathered = dump(weights_only);
    PipelineCheckpoint(strategy, context_.module(), optimizers()).gather(*gathered);
  }
  if (strategy.is_global_zero()) {
    try {
      Checkpoint checkpoint = gathered ? *gathered : dump(weights_only);
      if (async()) {
        async_io().save(checkpoint, path);
      } else {
        CheckpointIO::save(checkpoint, path);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(strategy, error, fmt::format("[CheckpointConnector::save] rank 0 failed to write {}", path.string()));
}

void CheckpointConnector::save_alone(const std::filesystem::path& path, bool weights_only) {
  if (async_io_) {
    if (context_.handling_exception()) {
      finish_writes_quietly();
    } else {
      async_io_->wait();
    }
  }
  CheckpointIO::save(dump(weights_only), path);
}

void CheckpointConnector::after_write(std::function<void()> action) {
  if (async_io_) {
    async_io_->after_write(std::move(action));
  } else {
    action();
  }
}

void CheckpointConnector::finish_writes() {
  if (!async()) return;  // nothing is ever in flight: no collective either
  std::string error;
  if (async_io_) {
    try {
      async_io_->wait();
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(context_.strategy(), error, "[CheckpointConnector] rank 0 failed to write the last checkpoint");
}

void CheckpointConnector::finish_writes_quietly() {
  if (!async_io_) return;
  try {
    async_io_->wait();
  } catch (const std::exception& e) {
    std::cerr << "fulgur: error: " << e.what() << std::endl;
  }
}

void CheckpointConnector::end_run() {
  finish_writes_quietly();
  async_io_.reset();  // joins the writer thread
}

void CheckpointConnector::restore_model(const Checkpoint& checkpoint, const std::string& source) {
  c10::Dict<std::string, torch::Tensor> weights = checkpoint_weights(checkpoint, source);
  Strategy& strategy = context_.strategy();
  if (strategy.device_mesh().spans("pp")) {  // this rank's stages
    weights = PipelineCheckpoint(strategy, context_.module(), {}).local_weights(weights);
  }
  if (strategy.shards_parameters()) {
    // Parameters hold this rank's rows: take those rows of the whole.
    for (const auto& item : context_.module().named_parameters()) {
      if (weights.contains(item.key())) {
        weights.insert_or_assign(item.key(), strategy.local_tensor(item.value(), weights.at(item.key())));
      }
    }
  }
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
      if (!strategy.shards_optimizer_state()) {
        load_optimizer_state_dict(*configs[i].optimizer, saved);
      } else {
        // Whole state (any world size wrote it): this rank keeps its rows.
        saved = saved.copy();
        const std::vector<torch::Tensor> params = indexed_parameters(*configs[i].optimizer);
        Dict state(c10::IntType::get(), c10::AnyType::get());
        for (const auto& entry : saved.at("state").toGenericDict()) {
          const torch::Tensor& param = params.at(static_cast<size_t>(entry.key().toInt()));
          Dict local = entry.value().toGenericDict().copy();
          for (const auto& item : entry.value().toGenericDict()) {
            if (item.value().isTensor() && item.value().toTensor().dim() > 0) local.insert_or_assign(item.key(), strategy.local_tensor(param, item.value().toTensor()));
          }
          state.insert(entry.key(), local);
        }
        saved.insert_or_assign("state", state);
        load_optimizer_state_dict(*configs[i].optimizer, saved,
                                  [&](const torch::Tensor& p) { return strategy.local_tensor(p, p.detach()); });
      }
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
