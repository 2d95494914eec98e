#include <fulgur/engine/checkpoint/sharded_state_writer.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/sharding/shard_layout.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/version.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

}  // namespace

ShardedStateWriter::ShardedStateWriter(Strategy& strategy, const ShardLayout* layout, const torch::nn::Module& module,
                                       std::vector<const torch::optim::Optimizer*> optimizers)
    : strategy_(strategy), layout_(layout), module_(module), optimizers_(std::move(optimizers)) {}

void ShardedStateWriter::gather_whole(Checkpoint& checkpoint) const {
  // Rank 0 writes; under a pipeline each stage's first rank also keeps its
  // stage's wholes, which it sends to rank 0 (PipelineCheckpoint::gather).
  const DeviceMesh& mesh = strategy_.device_mesh();
  const bool keep = strategy_.is_global_zero() || (mesh.spans("pp") && mesh.rank("dp") == 0 &&
                                                   mesh.rank("cp") == 0 && mesh.rank("tp") == 0);
  gather(checkpoint, keep,
         [this](const torch::Tensor& param, const torch::Tensor& t) { return strategy_.whole_tensor(param, t); });
}

void ShardedStateWriter::gather_slices(Checkpoint& checkpoint) const {
  const DeviceMesh& mesh = strategy_.device_mesh();
  gather(checkpoint, mesh.rank("dp") == 0 && mesh.rank("cp") == 0,
         [this](const torch::Tensor& param, const torch::Tensor& t) {
           return strategy_.data_parallel_whole_tensor(param, t);
         });
}

void ShardedStateWriter::gather(
    Checkpoint& checkpoint, bool keep,
    const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& gather) const {
  // One parameter at a time: no rank ever holds more than the whole model once.
  Dict weights = checkpoint.at("state_dict").toGenericDict();
  for (const auto& item : module_.named_parameters()) {
    torch::Tensor whole = gather(item.value(), item.value());
    if (keep) weights.insert_or_assign(item.key(), whole.detach());
  }
  if (!checkpoint.contains("optimizer_states")) return;
  const List optimizers = checkpoint.at("optimizer_states").toList();
  for (size_t i = 0; i < optimizers.size(); ++i) {
    const std::vector<torch::Tensor> params = indexed_parameters(*optimizers_.at(i));
    const Dict state = optimizers.get(i).toGenericDict().at("state").toGenericDict();
    for (const auto& entry : state) {
      const torch::Tensor& param = params.at(static_cast<size_t>(entry.key().toInt()));
      Dict per_param = entry.value().toGenericDict();
      std::vector<std::pair<std::string, torch::Tensor>> wholes;
      for (const auto& item : per_param) {
        if (!item.value().isTensor()) continue;
        torch::Tensor whole = gather(param, item.value().toTensor());
        if (keep) wholes.emplace_back(item.key().toStringRef(), whole);
      }
      for (auto& [key, whole] : wholes) per_param.insert_or_assign(key, whole);
    }
  }
}

void ShardedStateWriter::save_sharded(Checkpoint checkpoint, const std::filesystem::path& path) const {
  const std::string id = agreed_save_id(strategy_);
  // The ranks the model is sharded over: every rank, but under HYBRID_SHARD
  // a node's; then the first node writes (the others hold the same rows).
  if (layout_ == nullptr) throw std::logic_error("[ShardedStateWriter::save_sharded] the strategy has no shard layout");
  const int64_t rank = layout_->rank();
  const int64_t world = layout_->world();
  const bool writes = strategy_.global_rank() < world;

  Checkpoint shard = new_state_dict();
  shard.insert(CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
  shard.insert("rank", rank);
  shard.insert("world_size", world);
  Dict rows = new_state_dict();
  Dict shapes = new_state_dict();
  std::map<const void*, std::string> names;
  for (const auto& item : module_.named_parameters()) {
    names[item.value().unsafeGetTensorImpl()] = item.key();
    const auto shape = layout_->whole_shape(item.value());
    if (!shape) continue;
    rows.insert(item.key(), layout_->shard_of(item.value(), item.value().detach()));
    List dims(c10::AnyType::get());
    for (int64_t d : *shape) dims.push_back(d);
    shapes.insert(item.key(), dims);
  }
  shard.insert("state_dict", rows);
  List shard_optimizers(c10::AnyType::get());
  List optimizer_params(c10::AnyType::get());
  List meta_optimizers(c10::AnyType::get());
  if (checkpoint.contains("optimizer_states")) {
    const List optimizers = checkpoint.at("optimizer_states").toList();
    for (size_t i = 0; i < optimizers.size(); ++i) {
      const Dict optimizer = optimizers.get(i).toGenericDict();
      shard_optimizers.push_back(optimizer.at("state"));
      List index_names(c10::AnyType::get());
      for (const auto& p : indexed_parameters(*optimizers_.at(i))) {
        index_names.push_back(names.count(p.unsafeGetTensorImpl()) ? names[p.unsafeGetTensorImpl()] : std::string());
      }
      optimizer_params.push_back(index_names);
      Dict without_state = optimizer.copy();
      without_state.insert_or_assign("state", Dict(c10::IntType::get(), c10::AnyType::get()));
      meta_optimizers.push_back(without_state);
    }
    shard.insert("optimizer_states", shard_optimizers);
  }
  std::string error;
  try {
    if (writes) CheckpointIO::save(shard, shard_file(path, id, rank, world));
  } catch (const std::exception& e) {
    error = e.what();
  }
  agree_on_failure(strategy_, error,
                   fmt::format("[CheckpointWriter::save] another rank failed to write its shard of {}", path.string()));

  // Every shard is on disk: the metadata makes the checkpoint complete.
  if (strategy_.is_global_zero()) {
    Dict weights = checkpoint.at("state_dict").toGenericDict();
    // Empty in the metadata, in their place: joined, the keys keep the module's order.
    for (const auto& entry : shapes) weights.insert_or_assign(entry.key(), torch::empty({0}));
    if (checkpoint.contains("optimizer_states")) checkpoint.insert_or_assign("optimizer_states", meta_optimizers);
    Dict meta = new_state_dict();
    meta.insert("shapes", shapes);
    meta.insert("optimizer_params", optimizer_params);
    try {
      save_shard_metadata(checkpoint, kShardsKey, meta, world, id, path);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(strategy_, error, fmt::format("[CheckpointWriter::save] rank 0 failed to write {}", path.string()));
}

}  // namespace fulgur
