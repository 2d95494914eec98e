#include <fulgur/engine/checkpoint/pipeline_checkpoint.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using List = c10::impl::GenericList;

/// The layer a PipelineModule's parameter belongs to ("layers.<i>.…").
int64_t layer_of(const std::string& name) {
  const std::string prefix = "layers.";
  const size_t end = name.find('.', prefix.size());
  if (name.rfind(prefix, 0) != 0 || end == std::string::npos) {
    throw std::invalid_argument(fmt::format(
        "[PipelineCheckpoint] parameter '{}' is outside the PipelineModule's layers: a pipeline keeps every "
        "parameter in a layer",
        name));
  }
  return std::stoll(name.substr(prefix.size(), end - prefix.size()));
}

std::string pickled(const c10::IValue& value) {
  const std::vector<char> bytes = torch::pickle_save(value);
  return std::string(bytes.begin(), bytes.end());
}

c10::IValue unpickled(const std::string& bytes) { return torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end())); }

}  // namespace

PipelineCheckpoint::PipelineCheckpoint(Strategy& strategy, torch::nn::Module& module,
                                       std::vector<const torch::optim::Optimizer*> optimizers)
    : strategy_(strategy), module_(module), optimizers_(std::move(optimizers)) {
  for (const auto* optimizer : optimizers_) {
    if (optimizer->param_groups().size() != 1) {
      throw std::invalid_argument(fmt::format("[PipelineCheckpoint] an optimizer with {} parameter groups: checkpoints "
                                              "of a pipeline take optimizers with one",
                                              optimizer->param_groups().size()));
    }
  }
  // One process's order: layer by layer, each layer's parameters in the
  // order its rank has them. Every rank tells its names.
  std::string mine;
  for (const auto& item : module.named_parameters()) mine += item.key() + "\n";
  std::vector<std::pair<int64_t, std::string>> order;
  std::map<std::string, bool> seen;
  for (const std::string& names : strategy.all_gather_bytes(mine)) {
    std::istringstream in(names);
    for (std::string name; std::getline(in, name);) {
      if (seen.emplace(name, true).second) order.emplace_back(layer_of(name), name);
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < order.size(); ++i) whole_index_[order[i].second] = static_cast<int64_t>(i);
}

std::vector<std::string> PipelineCheckpoint::whole_order() const {
  std::vector<std::string> out(whole_index_.size());
  for (const auto& [name, index] : whole_index_) out[static_cast<size_t>(index)] = name;
  return out;
}

std::vector<std::string> PipelineCheckpoint::optimizer_names(size_t index) const {
  return indexed_parameter_names(module_, *optimizers_.at(index));
}

void PipelineCheckpoint::gather(Checkpoint& checkpoint) const {
  // One rank of each stage sends it (the others hold copies or tensor-parallel parts gathered already).
  DeviceMesh& mesh = strategy_.device_mesh();
  const bool sends = mesh.rank("dp") == 0 && mesh.rank("cp") == 0 && mesh.rank("tp") == 0;
  std::string part;
  if (sends) {
    Dict mine = new_state_dict();
    mine.insert("state_dict", checkpoint.at("state_dict"));
    List states(c10::AnyType::get());
    if (checkpoint.contains("optimizer_states")) {
      const List optimizers = checkpoint.at("optimizer_states").toList();
      for (size_t k = 0; k < optimizers.size(); ++k) {
        const std::vector<std::string> names = optimizer_names(k);
        Dict by_name = new_state_dict();
        for (const auto& entry : optimizers.get(k).toGenericDict().at("state").toGenericDict()) {
          by_name.insert(names.at(static_cast<size_t>(entry.key().toInt())), entry.value());
        }
        states.push_back(by_name);
      }
    }
    mine.insert("optimizer_states", states);
    part = pickled(mine);
  }
  const std::vector<std::string> parts = strategy_.all_gather_bytes(part);
  if (!strategy_.is_global_zero()) return;

  Dict weights = checkpoint.at("state_dict").toGenericDict();
  std::vector<Dict> states;
  for (const std::string& bytes : parts) {
    if (bytes.empty()) continue;
    const Dict stage = unpickled(bytes).toGenericDict();
    for (const auto& item : stage.at("state_dict").toGenericDict()) weights.insert_or_assign(item.key(), item.value());
    const List optimizers = stage.at("optimizer_states").toList();
    states.resize(optimizers.size(), Dict(c10::IntType::get(), c10::AnyType::get()));
    for (size_t k = 0; k < optimizers.size(); ++k) {
      for (const auto& entry : optimizers.get(k).toGenericDict()) {
        states[k].insert_or_assign(whole_index_.at(entry.key().toStringRef()), entry.value());
      }
    }
  }
  if (!checkpoint.contains("optimizer_states")) return;
  const List optimizers = checkpoint.at("optimizer_states").toList();
  for (size_t k = 0; k < optimizers.size(); ++k) {
    Dict optimizer = optimizers.get(k).toGenericDict();
    optimizer.insert_or_assign("state", states.at(k));
    Dict group = optimizer.at("param_groups").toList().get(0).toGenericDict();
    List params(c10::AnyType::get());
    for (int64_t i = 0; i < static_cast<int64_t>(whole_index_.size()); ++i) params.push_back(i);
    group.insert_or_assign("params", params);
  }
}

c10::Dict<std::string, torch::Tensor> PipelineCheckpoint::local_weights(
    const c10::Dict<std::string, torch::Tensor>& whole) const {
  c10::Dict<std::string, torch::Tensor> mine;
  for (const auto& item : module_.named_parameters()) {
    if (whole.contains(item.key())) mine.insert(item.key(), whole.at(item.key()));
  }
  for (const auto& item : module_.named_buffers()) {
    if (whole.contains(item.key())) mine.insert(item.key(), whole.at(item.key()));
  }
  return mine;
}

Dict PipelineCheckpoint::local_optimizer_state(size_t index, const Dict& whole) const {
  Dict local = whole.copy();
  const Dict whole_state = whole.at("state").toGenericDict();
  Dict state(c10::IntType::get(), c10::AnyType::get());
  const std::vector<std::string> names = optimizer_names(index);
  List params(c10::AnyType::get());
  for (size_t j = 0; j < names.size(); ++j) {
    const int64_t g = whole_index_.at(names[j]);
    if (whole_state.contains(g)) state.insert(static_cast<int64_t>(j), whole_state.at(g));
    params.push_back(static_cast<int64_t>(j));
  }
  local.insert_or_assign("state", state);
  List groups = whole.at("param_groups").toList().copy();
  if (groups.size() != 1) {
    throw std::invalid_argument(fmt::format("[PipelineCheckpoint] the checkpoint's optimizer has {} parameter groups; "
                                            "a pipeline takes optimizers with one",
                                            groups.size()));
  }
  Dict group = groups.get(0).toGenericDict().copy();
  group.insert_or_assign("params", params);
  groups.set(0, group);
  local.insert_or_assign("param_groups", groups);
  return local;
}

}  // namespace fulgur
