#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/sharded_checkpoint.hpp>

#include <fmt/format.h>

#include <map>
#include <stdexcept>

namespace fulgur {
namespace {

// `name` without the path components ShardedUnit adds ("module").
std::string unwrapped(const std::string& name) {
  std::string out;
  size_t start = 0;
  while (start <= name.size()) {
    size_t dot = name.find('.', start);
    if (dot == std::string::npos) dot = name.size();
    const std::string part = name.substr(start, dot - start);
    if (part != "module" || dot == name.size()) out += (out.empty() ? "" : ".") + part;
    start = dot + 1;
  }
  return out;
}

}  // namespace

Checkpoint load_whole_checkpoint(const std::filesystem::path& path) {
  const Checkpoint checkpoint = CheckpointIO::load(path);
  return is_sharded_checkpoint(checkpoint) ? consolidate_sharded_checkpoint(checkpoint, path) : checkpoint;
}

c10::Dict<std::string, torch::Tensor> checkpoint_weights(const Checkpoint& checkpoint, const std::string& source) {
  if (!checkpoint.contains("state_dict") || !checkpoint.at("state_dict").isGenericDict()) {
    throw CheckpointError(fmt::format("[CheckpointConnector] {} has no 'state_dict' section", source));
  }
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& entry : checkpoint.at("state_dict").toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw CheckpointError(fmt::format("[CheckpointConnector] {}: 'state_dict' holds a non-tensor entry", source));
    }
    weights.insert(entry.key().toStringRef(), entry.value().toTensor());
  }
  return weights;
}

HParams checkpoint_model_hparams(const Checkpoint& checkpoint) {
  if (!checkpoint.contains("hyper_parameters") || !checkpoint.at("hyper_parameters").isGenericDict()) {
    return empty_hparams();
  }
  const HParams all = checkpoint.at("hyper_parameters").toGenericDict();
  const bool whole_configuration = all.contains("trainer") && all.contains("model") && all.at("model").isGenericDict();
  return whole_configuration ? all.at("model").toGenericDict() : all;
}

void load_checkpoint_weights(torch::nn::Module& module, const Checkpoint& checkpoint, const std::string& source) {
  const c10::Dict<std::string, torch::Tensor> saved = checkpoint_weights(checkpoint, source);
  // The module's names by their unwrapped form, for keys that differ by a wrapper.
  const auto own = state_dict(module);
  std::map<std::string, std::string> by_unwrapped;
  for (const auto& entry : own) by_unwrapped[unwrapped(entry.key())] = entry.key();
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& entry : saved) {
    std::string name = entry.key();
    if (!own.contains(name)) {
      const auto found = by_unwrapped.find(unwrapped(name));
      if (found != by_unwrapped.end()) name = found->second;
    }
    weights.insert(name, entry.value());
  }
  try {
    load_state_dict(module, weights, /*strict=*/true);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(fmt::format("[load_checkpoint_weights] {} does not fit the model: {}", source, e.what()));
  }
}

void load_checkpoint_weights(torch::nn::Module& module, const std::filesystem::path& path) {
  load_checkpoint_weights(module, load_whole_checkpoint(path), path.string());
}

}  // namespace fulgur
