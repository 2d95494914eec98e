#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>

#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

Dict section(const Checkpoint& c, const std::string& key, const std::filesystem::path& where) {
  if (!c.contains(key) || !c.at(key).isGenericDict()) {
    throw CheckpointError(fmt::format("[consolidate_sharded_checkpoint] {} has no '{}' section", where.string(), key));
  }
  return c.at(key).toGenericDict();
}

/// One tensor from its ranks' rows: joined along dim 0; a 0-dim one is rank 0's.
torch::Tensor join_rows(const std::vector<torch::Tensor>& parts, const std::vector<int64_t>& shape, const std::string& name,
                   const std::filesystem::path& path) {
  torch::Tensor whole = shape.empty() ? parts.front().reshape({}) : torch::cat(parts, 0);
  if (whole.sizes() != c10::IntArrayRef(shape)) {
    throw CheckpointError(fmt::format("[consolidate_sharded_checkpoint] {}: the shards of '{}' join to {} elements, "
                                      "the parameter has a different shape",
                                      path.string(), name, whole.numel()));
  }
  return whole;
}

/// The path the shards of the metadata at `path` were saved beside: a
/// link to it (last.ckpt) has another name than the file they are named after.
std::filesystem::path saved_path(const Dict& meta, const std::filesystem::path& path) {
  return meta.contains("name") ? path.parent_path() / meta.at("name").toStringRef() : path;
}

/// The ranks whose files a sharded checkpoint's metadata names.
std::vector<int64_t> shard_ranks(const Dict& meta) {
  std::vector<int64_t> ranks;
  if (meta.contains("writers")) {
    const List writers = meta.at("writers").toList();
    for (size_t i = 0; i < writers.size(); ++i) ranks.push_back(writers.get(i).toInt());
  } else {
    for (int64_t r = 0; r < meta.at("world_size").toInt(); ++r) ranks.push_back(r);
  }
  return ranks;
}

std::vector<Checkpoint> load_shards(const Dict& meta, const std::filesystem::path& path) {
  const int64_t world = meta.at("world_size").toInt();
  const std::string id = meta.at("id").toStringRef();
  std::vector<Checkpoint> shards;
  for (int64_t r : shard_ranks(meta)) {
    const std::filesystem::path file = shard_file(saved_path(meta, path), id, r, world);
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      throw CheckpointError(fmt::format("[consolidate_sharded_checkpoint] {} is incomplete: shard {} of {} ({}) is missing",
                                        path.string(), r, world, file.string()));
    }
    shards.push_back(CheckpointIO::load(file));
  }
  return shards;
}

/// `value`'s tp slices (`parts`, in tp order) joined along `dim` where it is
/// shaped like its parameter's slice (moments); kept as the first otherwise (a step).
c10::IValue join_slices(const std::vector<c10::IValue>& parts, int64_t dim) {
  const c10::IValue& first = parts.front();
  if (dim < 0 || !first.isTensor() || first.toTensor().dim() <= dim) return first;
  std::vector<torch::Tensor> tensors;
  for (const auto& part : parts) tensors.push_back(part.toTensor());
  return torch::cat(tensors, dim);
}

/// The whole checkpoint from a mesh's parts (the layout is in the header).
Checkpoint consolidate_mesh(const Checkpoint& metadata, const std::filesystem::path& path) {
  const Dict meta = section(metadata, kMeshShardsKey, path);
  std::vector<Checkpoint> shards = load_shards(meta, path);
  std::stable_sort(shards.begin(), shards.end(),
                   [](const Checkpoint& a, const Checkpoint& b) { return a.at("tp_rank").toInt() < b.at("tp_rank").toInt(); });
  // Each tensor's parts in tp order, names in the order the first part came.
  std::vector<std::string> order;
  std::map<std::string, std::vector<c10::IValue>> parts;
  std::map<std::string, int64_t> splits;
  for (const auto& shard : shards) {
    for (const auto& item : section(shard, "state_dict", path)) {
      const std::string& name = item.key().toStringRef();
      if (parts[name].empty()) order.push_back(name);
      parts[name].push_back(item.value());
    }
    for (const auto& item : section(shard, "splits", path)) splits[item.key().toStringRef()] = item.value().toInt();
  }
  auto split_of = [&](const std::string& name) { return splits.count(name) ? splits.at(name) : int64_t{-1}; };
  Checkpoint whole = metadata.copy();
  (void)whole.erase(kMeshShardsKey);
  Dict weights = new_state_dict();
  for (const std::string& name : order) weights.insert(name, join_slices(parts.at(name), split_of(name)));
  whole.insert_or_assign("state_dict", weights);
  if (!metadata.contains("optimizer_states")) return whole;

  const List names = meta.at("optimizer_params").toList();
  const List saved = metadata.at("optimizer_states").toList();
  List optimizers(c10::AnyType::get());
  for (size_t k = 0; k < saved.size(); ++k) {
    std::map<std::string, std::vector<Dict>> states;  // a parameter's state, one per tp slice
    for (const auto& shard : shards) {
      for (const auto& item : shard.at("optimizer_states").toList().get(k).toGenericDict()) {
        states[item.key().toStringRef()].push_back(item.value().toGenericDict());
      }
    }
    Dict state(c10::IntType::get(), c10::AnyType::get());
    const List index_names = names.get(k).toList();
    for (size_t index = 0; index < index_names.size(); ++index) {
      const std::string name = index_names.get(index).toStringRef();
      const auto found = states.find(name);
      if (found == states.end()) continue;  // no state yet (never stepped)
      Dict joined = found->second.front().copy();
      for (const auto& item : found->second.front()) {
        std::vector<c10::IValue> slices;
        for (const Dict& slice : found->second) slices.push_back(slice.at(item.key()));
        joined.insert_or_assign(item.key(), join_slices(slices, split_of(name)));
      }
      state.insert(static_cast<int64_t>(index), joined);
    }
    Dict optimizer = saved.get(k).toGenericDict().copy();
    optimizer.insert_or_assign("state", state);
    optimizers.push_back(optimizer);
  }
  whole.insert_or_assign("optimizer_states", optimizers);
  return whole;
}

}  // namespace

std::string agreed_save_id(Strategy& strategy) {
  std::random_device random;
  const int64_t draw = static_cast<int64_t>((static_cast<uint64_t>(random()) << 32) | random());
  const int64_t agreed = strategy.broadcast(torch::tensor({draw}, torch::kInt64), 0).cpu().item<int64_t>();
  return fmt::format("{:016x}", static_cast<uint64_t>(agreed));
}

void save_shard_metadata(Checkpoint checkpoint, const char* key, Dict meta, int64_t world, const std::string& id,
                         const std::filesystem::path& path) {
  meta.insert("world_size", world);
  meta.insert("id", id);
  meta.insert("name", path.filename().string());
  checkpoint.insert(key, meta);
  CheckpointIO::save(checkpoint, path);
  remove_shards(path, id);
}

std::filesystem::path shard_file(const std::filesystem::path& path, const std::string& id, int64_t rank,
                                 int64_t world) {
  return std::filesystem::path(path.string() + fmt::format(".{}.shard-{}-of-{}", id, rank, world));
}

bool is_sharded_checkpoint(const Checkpoint& checkpoint) {
  for (const char* key : {kShardsKey, kMeshShardsKey}) {
    if (checkpoint.contains(key) && checkpoint.at(key).isGenericDict()) return true;
  }
  return false;
}

bool shards_complete(const Checkpoint& metadata, const std::filesystem::path& path) {
  const Dict meta = metadata.at(metadata.contains(kMeshShardsKey) ? kMeshShardsKey : kShardsKey).toGenericDict();
  const int64_t world = meta.at("world_size").toInt();
  const std::string id = meta.at("id").toStringRef();
  std::error_code ec;
  for (int64_t r : shard_ranks(meta)) {
    if (!std::filesystem::exists(shard_file(saved_path(meta, path), id, r, world), ec)) return false;
  }
  return true;
}

Checkpoint consolidate_sharded_checkpoint(const Checkpoint& metadata, const std::filesystem::path& path) {
  if (metadata.contains(kMeshShardsKey)) return consolidate_mesh(metadata, path);
  const Dict meta = section(metadata, kShardsKey, path);
  const std::vector<Checkpoint> shards = load_shards(meta, path);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& entry : meta.at("shapes").toGenericDict()) {
    std::vector<int64_t>& dims = shapes[entry.key().toStringRef()];
    const List saved_dims = entry.value().toList();
    for (size_t d = 0; d < saved_dims.size(); ++d) dims.push_back(saved_dims.get(d).toInt());
  }

  Checkpoint whole = metadata.copy();
  (void)whole.erase(kShardsKey);
  // Parameters: the metadata holds buffers and unsharded ones; the rest are rows in the shards.
  Dict weights = section(metadata, "state_dict", path).copy();
  for (const auto& [name, shape] : shapes) {
    std::vector<torch::Tensor> parts;
    for (const auto& shard : shards) parts.push_back(section(shard, "state_dict", path).at(name).toTensor());
    weights.insert_or_assign(name, join_rows(parts, shape, name, path));
  }
  whole.insert_or_assign("state_dict", weights);

  if (!metadata.contains("optimizer_states")) return whole;
  const List names = meta.at("optimizer_params").toList();
  const List saved = metadata.at("optimizer_states").toList();
  List optimizers(c10::AnyType::get());
  for (size_t i = 0; i < saved.size(); ++i) {
    Dict optimizer = saved.get(i).toGenericDict().copy();
    const List index_names = names.get(i).toList();
    Dict state(c10::IntType::get(), c10::AnyType::get());
    const Dict first = shards.front().at("optimizer_states").toList().get(i).toGenericDict();
    for (const auto& entry : first) {
      const int64_t index = entry.key().toInt();
      const std::string name = index_names.get(static_cast<size_t>(index)).toStringRef();
      const auto shape = shapes.find(name);
      Dict joined = entry.value().toGenericDict().copy();
      for (const auto& item : entry.value().toGenericDict()) {
        const c10::IValue& value = item.value();
        // Per-parameter moments have the parameter's rank; `step` and the like are rank 0's.
        if (shape == shapes.end() || !value.isTensor() || value.toTensor().dim() != static_cast<int64_t>(shape->second.size())) {
          continue;
        }
        std::vector<torch::Tensor> parts;
        for (const auto& shard : shards) {
          parts.push_back(shard.at("optimizer_states").toList().get(i).toGenericDict().at(index).toGenericDict()
                              .at(item.key()).toTensor());
        }
        joined.insert_or_assign(item.key(), join_rows(parts, shape->second, name, path));
      }
      state.insert(index, joined);
    }
    optimizer.insert_or_assign("state", state);
    optimizers.push_back(optimizer);
  }
  whole.insert_or_assign("optimizer_states", optimizers);
  return whole;
}

void remove_shards(const std::filesystem::path& path, const std::string& keep_id) {
  const std::string prefix = path.filename().string() + ".";
  const std::string keep = prefix + keep_id + ".shard-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find(".shard-") != std::string::npos &&
        (keep_id.empty() || name.rfind(keep, 0) != 0)) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

void remove_checkpoint(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);  // first: without its metadata the checkpoint is incomplete
  remove_shards(path);
}

}  // namespace fulgur
