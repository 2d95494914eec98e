#include <fulgur/strategies/model_parallel/parallelize_module.hpp>

#include <fulgur/core/did_you_mean.hpp>
#include <fulgur/strategies/model_parallel/shardable_embedding.hpp>
#include <fulgur/strategies/model_parallel/shardable_linear.hpp>
#include <fulgur/strategies/model_parallel/tensor_parallel_ops.hpp>

#include <fmt/format.h>

#include <sstream>
#include <stdexcept>
#include <vector>

namespace fulgur {
namespace {

std::vector<std::string> parts_of(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream in(name);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

bool matches(const std::string& pattern, const std::string& name) {
  const auto p = parts_of(pattern);
  const auto n = parts_of(name);
  if (p.size() != n.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != "*" && p[i] != n[i]) return false;
  }
  return true;
}

const char* style_name(ParallelStyle::Kind kind) {
  switch (kind) {
    case ParallelStyle::Kind::Colwise: return "ColwiseParallel";
    case ParallelStyle::Kind::Rowwise: return "RowwiseParallel";
    case ParallelStyle::Kind::Sequence: return "SequenceParallel";
  }
  return "?";
}

void apply_style(const std::string& name, torch::nn::Module& target, const ParallelStyle& style,
                 const std::shared_ptr<ProcessGroup>& group) {
  if (style.kind == ParallelStyle::Kind::Sequence) {
    for (auto& param : target.parameters()) sum_gradients_over_group(param, group);
    return;
  }
  if (auto* linear = dynamic_cast<ShardableLinearImpl*>(&target)) {
    linear->shard(style, group);
  } else if (auto* embedding = dynamic_cast<ShardableEmbeddingImpl*>(&target)) {
    embedding->shard(style, group);
  } else if (dynamic_cast<torch::nn::LinearImpl*>(&target) != nullptr ||
             dynamic_cast<torch::nn::EmbeddingImpl*>(&target) != nullptr) {
    throw std::invalid_argument(fmt::format(
        "'{}' is a torch::nn::{}: declare it fulgur::Shardable{} (the same layer, whose forward the plan can split)", name,
        target.name(), dynamic_cast<torch::nn::LinearImpl*>(&target) != nullptr ? "Linear" : "Embedding"));
  } else {
    throw std::invalid_argument(fmt::format("'{}' ({}) is not a ShardableLinear or ShardableEmbedding", name, target.name()));
  }
}

}  // namespace

void parallelize_module(torch::nn::Module& module, const DeviceMesh& mesh, const ParallelPlan& plan) {
  const auto named = module.named_modules("", /*include_self=*/false);
  std::vector<std::string> names;
  for (const auto& item : named) names.push_back(item.key());
  for (const auto& [pattern, style] : plan) {
    bool found = false;
    for (const auto& item : named) {
      if (!matches(pattern, item.key())) continue;
      found = true;
      if (!mesh.spans("tp")) continue;
      try {
        apply_style(item.key(), *item.value(), style, mesh.share_group("tp"));
      } catch (const std::exception& e) {
        throw std::invalid_argument(fmt::format("[parallelize_module] {} on '{}': {}", style_name(style.kind), item.key(), e.what()));
      }
    }
    if (!found && !mesh.spans("pp")) {  // a pipeline stage holds some layers only
      throw std::invalid_argument(fmt::format("[parallelize_module] the plan names '{}', which is no submodule of the model{}",
                                              pattern, did_you_mean(pattern, names)));
    }
  }
}

std::map<const void*, int64_t> split_parameter_dims(const torch::nn::Module& module) {
  std::map<const void*, int64_t> dims;
  // Not modules(include_self): the module may live on the caller's stack.
  std::vector<const torch::nn::Module*> all{&module};
  for (const auto& child : module.modules(/*include_self=*/false)) all.push_back(child.get());
  for (const torch::nn::Module* child : all) {
    if (const auto* linear = dynamic_cast<const ShardableLinearImpl*>(child)) {
      const int64_t dim = linear->weight_shard_dim();
      if (dim < 0) continue;
      dims[linear->weight.unsafeGetTensorImpl()] = dim;
      if (dim == 0 && linear->bias.defined()) dims[linear->bias.unsafeGetTensorImpl()] = 0;
    } else if (const auto* embedding = dynamic_cast<const ShardableEmbeddingImpl*>(child)) {
      const int64_t dim = embedding->weight_shard_dim();
      if (dim >= 0) dims[embedding->weight.unsafeGetTensorImpl()] = dim;
    }
  }
  return dims;
}

}  // namespace fulgur
