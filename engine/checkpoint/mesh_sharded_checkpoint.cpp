#include <fulgur/engine/checkpoint/mesh_sharded_checkpoint.hpp>

#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/engine/checkpoint/pipeline_checkpoint.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>
#include <fulgur/version.hpp>

#include <fmt/format.h>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

List string_list(const std::vector<std::string>& values) {
  List out(c10::AnyType::get());
  for (const auto& v : values) out.push_back(v);
  return out;
}

}  // namespace

MeshShardedCheckpoint::MeshShardedCheckpoint(Strategy& strategy, torch::nn::Module& module,
                                             std::vector<const torch::optim::Optimizer*> optimizers)
    : strategy_(strategy), module_(module), optimizers_(std::move(optimizers)) {
  // One process numbers every optimizer's parameters as a tp rank does;
  // under a pipeline, layer by layer over all stages (PipelineCheckpoint's order).
  if (strategy.device_mesh().spans("pp")) {
    const std::vector<std::string> order = PipelineCheckpoint(strategy, module, optimizers_).whole_order();
    whole_names_.assign(optimizers_.size(), order);
  } else {
    for (const auto* optimizer : optimizers_) whole_names_.push_back(indexed_parameter_names(module, *optimizer));
  }
}

void MeshShardedCheckpoint::save(Checkpoint checkpoint, const std::filesystem::path& path) const {
  const std::string id = agreed_save_id(strategy_);
  DeviceMesh& mesh = strategy_.device_mesh();
  const bool writes = mesh.rank("dp") == 0 && mesh.rank("cp") == 0;  // the others hold copies
  const int64_t rank = strategy_.global_rank(), world = strategy_.world_size();
  std::string error;
  if (writes) {
    try {
      Checkpoint part = new_state_dict();
      part.insert(CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
      part.insert("tp_rank", mesh.rank("tp"));
      part.insert("state_dict", checkpoint.at("state_dict"));
      Dict splits = new_state_dict();
      for (const auto& item : module_.named_parameters()) splits.insert(item.key(), strategy_.split_dim(item.value()));
      part.insert("splits", splits);
      List states(c10::AnyType::get());
      if (checkpoint.contains("optimizer_states")) {
        const List optimizers = checkpoint.at("optimizer_states").toList();
        for (size_t k = 0; k < optimizers.size(); ++k) {
          const std::vector<std::string> names = indexed_parameter_names(module_, *optimizers_.at(k));
          Dict by_name = new_state_dict();
          for (const auto& entry : optimizers.get(k).toGenericDict().at("state").toGenericDict()) {
            by_name.insert(names.at(static_cast<size_t>(entry.key().toInt())), entry.value());
          }
          states.push_back(by_name);
        }
      }
      part.insert("optimizer_states", states);
      CheckpointIO::save(part, shard_file(path, id, rank, world));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  const std::vector<std::string> wrote = strategy_.all_gather_bytes(writes ? "1" : "");
  agree_on_failure(strategy_, error,
                   fmt::format("[CheckpointWriter::save] another rank failed to write its part of {}", path.string()));
  // Every part is on disk: the metadata makes the checkpoint complete.
  if (strategy_.is_global_zero()) {
    try {
      checkpoint.insert_or_assign("state_dict", new_state_dict());
      Dict meta = new_state_dict();
      List writers(c10::AnyType::get()), optimizer_params(c10::AnyType::get());
      for (size_t r = 0; r < wrote.size(); ++r) {
        if (!wrote[r].empty()) writers.push_back(static_cast<int64_t>(r));
      }
      if (checkpoint.contains("optimizer_states")) {
        const List optimizers = checkpoint.at("optimizer_states").toList();
        List without_state(c10::AnyType::get());
        for (size_t k = 0; k < optimizers.size(); ++k) {
          Dict optimizer = optimizers.get(k).toGenericDict().copy();
          optimizer.insert_or_assign("state", Dict(c10::IntType::get(), c10::AnyType::get()));
          if (mesh.spans("pp")) {  // one group (PipelineCheckpoint's rule) over every stage's parameters
            List groups = optimizer.at("param_groups").toList().copy();
            Dict group = groups.get(0).toGenericDict().copy();
            List params(c10::AnyType::get());
            for (size_t i = 0; i < whole_names_.at(k).size(); ++i) params.push_back(static_cast<int64_t>(i));
            group.insert_or_assign("params", params);
            groups.set(0, group);
            optimizer.insert_or_assign("param_groups", groups);
          }
          without_state.push_back(optimizer);
          optimizer_params.push_back(string_list(whole_names_.at(k)));
        }
        checkpoint.insert_or_assign("optimizer_states", without_state);
      }
      meta.insert("writers", writers);
      meta.insert("optimizer_params", optimizer_params);
      save_shard_metadata(checkpoint, kMeshShardsKey, meta, world, id, path);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  agree_on_failure(strategy_, error, fmt::format("[CheckpointWriter::save] rank 0 failed to write {}", path.string()));
}

}  // namespace fulgur
