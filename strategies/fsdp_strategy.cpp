#include <fulgur/strategies/fsdp_strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <unordered_set>

namespace fulgur {

ShardingStrategy sharding_strategy(const std::string& name) {
  if (name == "SHARD_GRAD_OP") return ShardingStrategy::ShardGradOp;
  if (name == "NO_SHARD") return ShardingStrategy::NoShard;
  throw std::invalid_argument(
      fmt::format("[sharding_strategy] fsdp.sharding_strategy must be one of SHARD_GRAD_OP, NO_SHARD, got '{}'", name));
}

FSDPStrategy::FSDPStrategy(Accelerator accelerator, PrecisionMode precision, FSDPStrategyOptions options)
    : DDPStrategy(accelerator, precision, options.ddp), options_(std::move(options)) {}

FSDPStrategy::~FSDPStrategy() = default;

void FSDPStrategy::setup(LightningModule& module) {
  if (options_.sharding == ShardingStrategy::NoShard) {
    DDPStrategy::setup(module);
    return;
  }
  setup_replicas(module);
  automatic_ = module.automatic_optimization();
  std::vector<torch::Tensor> params;
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters()) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  ShardedReducer::Options o = options_.sharded;
  o.hooks = automatic_;  // manual_backward averages whole gradients (average_gradients)
  sharded_ = std::make_unique<ShardedReducer>(std::move(params), std::move(names), process_group(), o);
}

void FSDPStrategy::teardown() {
  sharded_.reset();
  DDPStrategy::teardown();
}

void FSDPStrategy::backward(const torch::Tensor& loss, bool sync_gradients) {
  if (!sharded_) {
    DDPStrategy::backward(loss, sync_gradients);
    return;
  }
  if (automatic_) sharded_->prepare(sync_gradients);
  Strategy::backward(loss, sync_gradients);
}

void FSDPStrategy::synchronize_gradients() {
  if (!sharded_) {
    DDPStrategy::synchronize_gradients();
    return;
  }
  if (automatic_) sharded_->finish();
}

bool FSDPStrategy::optimizer_step(torch::optim::Optimizer& optimizer) {
  if (!sharded_) return DDPStrategy::optimizer_step(optimizer);
  // Manual optimization: gradients were averaged whole; slice them now.
  std::unordered_set<const void*> stepped;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) stepped.insert(p.unsafeGetTensorImpl());
  }
  sharded_->shard_from_whole(stepped);
  const bool result = Strategy::optimizer_step(optimizer);
  sharded_->gather();
  return result;
}

void FSDPStrategy::clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  if (!sharded_ || algorithm == ClipAlgorithm::Value) {
    Strategy::clip_gradients(optimizer, value, algorithm);
    return;
  }
  torch::NoGradGuard no_grad;
  // The global norm: squares summed over this rank's shards, plus (once,
  // on rank 0) parameters every rank holds whole, then summed over ranks.
  std::vector<torch::Tensor> grads;
  torch::Tensor squares = torch::zeros({1}, torch::TensorOptions().dtype(torch::kDouble).device(root_device()));
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      grads.push_back(p.grad());
      if (sharded_->holds_shard(p) || is_global_zero()) squares += p.grad().to(torch::kDouble).pow(2).sum();
    }
  }
  process_group().all_reduce(squares, ReduceOp::Sum);
  const double norm = std::sqrt(squares.item<double>());
  // As torch::nn::utils::clip_grad_norm_: scale by max_norm / (norm + 1e-6) when below 1.
  const double coefficient = value / (norm + 1e-6);
  if (coefficient >= 1.0) return;
  for (auto& g : grads) g.mul_(coefficient);
}

torch::Tensor FSDPStrategy::whole_optimizer_state(const torch::Tensor& param, const torch::Tensor& state) {
  return sharded_ ? sharded_->whole_of(param, state) : state;
}

torch::Tensor FSDPStrategy::local_optimizer_state(const torch::Tensor& param, const torch::Tensor& whole) const {
  return sharded_ ? sharded_->shard_of(param, whole) : whole;
}

}  // namespace fulgur
