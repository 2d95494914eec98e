#include <fulgur/strategies/fsdp_strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <functional>
#include <numeric>
#include <sstream>
#include <exception>
#include <stdexcept>
#include <unordered_set>

namespace fulgur {

FSDPStrategy::FSDPStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel,
                           FSDPOptions options, DDPOptions ddp, int64_t shard_group_size)
    : DataParallelStrategy(accelerator, precision, std::move(data_parallel), std::move(ddp)),
      options_(std::move(options)),
      shard_group_size_(shard_group_size),
      sharding_(options_.sharding_strategy()) {}

FSDPStrategy::~FSDPStrategy() { release_shards(); }  // before shard_group_ and replica_group_

void FSDPStrategy::release_shards() {
  // The reducer uses the residency, which uses the layout.
  sharded_ = nullptr;
  set_synchronizer(nullptr);
  residency_.reset();
  layout_.reset();
}

void FSDPStrategy::setup_environment() {
  DataParallelStrategy::setup_environment();
  if (sharding_ != ShardingStrategy::HybridShard || shard_group_) return;
  const int64_t size = shard_group_size_;
  if (size < 1 || world_size() % size != 0) {
    throw std::invalid_argument(fmt::format("[FSDPStrategy] HYBRID_SHARD needs the world size ({}) to be a multiple of "
                                            "the ranks per node ({})",
                                            world_size(), size));
  }
  // Consecutive ranks are a node's (the launchers number them so).
  const int64_t rank = global_rank();
  shard_group_ = std::make_unique<ProcessGroup>(process_group(), fmt::format("fsdp_shard_{}", rank / size), rank % size,
                                                size);
  if (world_size() > size) {
    replica_group_ = std::make_unique<ProcessGroup>(process_group(), fmt::format("fsdp_replica_{}", rank % size),
                                                    rank / size, world_size() / size);
  }
}

void FSDPStrategy::setup(LightningModule& module) {
  if (sharding_ == ShardingStrategy::NoShard || replicas() == nullptr) {  // nothing to shard over
    DataParallelStrategy::setup(module);
    return;
  }
  setup_replicas(module);
  release_shards();
  const bool automatic = module.automatic_optimization();
  auto [params, names] = named_parameters_of(module);
  std::vector<std::string> unit_modules;
  std::stringstream wrap(options_.wrap_modules());
  for (std::string name; std::getline(wrap, name, ',');) {
    if (!name.empty()) unit_modules.push_back(name);
  }
  ShardedReducer::Options o;
  o.find_unused_parameters = ddp_options().find_unused_parameters();
  // manual_backward averages whole gradients (average_gradients); a
  // pipeline's micro-batches accumulate whole gradients that one
  // reduce-scatter takes after the schedule (average_gradients too).
  o.hooks = automatic && !pipelined();
  o.unshard_after_step = !pipelined();  // the next step's gather does it
  const bool hybrid = sharding_ == ShardingStrategy::HybridShard;
  const bool reshard = sharding_ == ShardingStrategy::FullShard || hybrid;
  o.replicas = hybrid ? replica_group_.get() : nullptr;
  // Every ShardedUnit with trainable parameters is a unit of its own.
  std::vector<std::pair<std::string, ShardedUnitBase*>> wrapped;
  // Not the module itself: a user's main may hold it on the stack (no shared_ptr).
  for (const auto& item : module.named_modules("", /*include_self=*/false)) {
    auto* unit = dynamic_cast<ShardedUnitBase*>(item.value().get());
    if (unit == nullptr || item.value()->parameters().empty()) continue;
    wrapped.emplace_back(item.key(), unit);
    unit_modules.push_back(item.key());
  }
  ProcessGroup& shards = hybrid ? *shard_group_ : *replicas();
  layout_ = std::make_unique<ShardLayout>(params, names, shards.size(), shards.rank(), unit_modules,
                                          options_.min_num_params());
  residency_ = std::make_unique<UnitResidency>(*layout_, shards, reshard);
  auto sharded = std::make_unique<ShardedReducer>(*layout_, *residency_, shards, o);
  sharded_ = sharded.get();
  set_synchronizer(std::move(sharded));
  // Only FULL_SHARD gathers per forward, and not under a pipeline: its
  // micro-batches' forwards and backwards interleave, so the stage's units
  // stay whole from the step's start to the reduce-scatter after its schedule.
  if (!reshard || !automatic || pipelined()) return;
  for (const auto& [name, unit] : wrapped) {
    const auto index = layout_->unit_of_module(name);
    if (!index) continue;
    residency_->set_forward_gathered(*index);
    hooked_units_[dynamic_cast<const torch::nn::Module*>(unit)] = *index;
    unit->set_sharded_unit_hooks(this);
    hooked_.push_back(unit);
  }
}

void FSDPStrategy::before_forward(const torch::nn::Module& unit) {
  if (!sharded_) return;
  const size_t index = hooked_units_.at(&unit);
  if (!torch::GradMode::is_enabled()) {  // evaluation
    if (unit_evaluation_) evaluation_sequence_.push_back(index);
    residency_->unshard_unit(index);
    return;
  }
  residency_->unshard_unit(index);
  if (!order_recorded_) {
    if (std::find(forward_order_.begin(), forward_order_.end(), index) == forward_order_.end()) {
      forward_order_.push_back(index);
    }
    return;
  }
  if (!options_.forward_prefetch()) return;
  // The next unit of the first step's forward starts gathering now.
  const auto at = std::find(forward_order_.begin(), forward_order_.end(), index);
  if (at != forward_order_.end() && std::next(at) != forward_order_.end()) residency_->prefetch_unit(*std::next(at));
}

void FSDPStrategy::before_unit_backward(size_t index) {
  if (!sharded_) return;
  residency_->unshard_unit(index);
  if (!order_recorded_ || options_.backward_prefetch() != BackwardPrefetch::BackwardPre) return;
  // Backward runs the forward order backwards: the unit before this one is next.
  const auto at = std::find(forward_order_.begin(), forward_order_.end(), index);
  if (at != forward_order_.end() && at != forward_order_.begin()) residency_->prefetch_unit(*std::prev(at));
}

void FSDPStrategy::after_forward(const torch::nn::Module& unit, const std::vector<torch::Tensor>& outputs) {
  if (!sharded_) return;
  const size_t index = hooked_units_.at(&unit);
  if (!torch::GradMode::is_enabled()) {  // evaluation: no backward needs it again
    if (unit_evaluation_) residency_->free_unit(index);
    return;
  }
  // Outputs the hooks cannot see: the unit stays whole until its gradients
  // are reduce-scattered.
  if (outputs.empty()) return;
  for (const auto& out : outputs) {
    // The gradient of an output arrives just before the unit's own backward.
    if (out.defined() && out.requires_grad()) {
      torch::Tensor(out).register_hook([this, index](const torch::Tensor&) { before_unit_backward(index); });
    }
  }
  residency_->free_unit(index);
}

void FSDPStrategy::teardown() {
  // After a run the module is whole again (a user's main saves or
  // evaluates it), unless the user keeps the shards of a model too big for
  // one rank. Not while an error is handled: another rank may be gone, and
  // the collective would only wait for the timeout.
  for (auto* unit : hooked_) unit->set_sharded_unit_hooks(nullptr);
  hooked_.clear();
  hooked_units_.clear();
  forward_order_.clear();
  order_recorded_ = false;
  if (sharded_ && options_.whole_after_fit() && std::current_exception() == nullptr) {
    residency_->unshard_all();
  }
  release_shards();
  DataParallelStrategy::teardown();
}

void FSDPStrategy::before_training_step() {
  DataParallelStrategy::before_training_step();
  if (!sharded_) return;
  residency_->unshard();
  if (options_.forward_prefetch() && order_recorded_ && !forward_order_.empty()) {
    residency_->prefetch_unit(forward_order_.front());
  }
}

void FSDPStrategy::before_evaluation(int64_t num_batches) {
  if (!sharded_) return;
  // ShardedUnits are gathered by their own forwards, as in training; the
  // rest stays whole for the loop. Ranks may run different numbers of
  // batches (evaluation shards are not padded): those with fewer repeat
  // their batches' gathers at the end, which needs at least one batch on
  // every rank to show them; otherwise every unit is gathered for the loop.
  unit_evaluation_ = false;
  if (!hooked_units_.empty()) {
    torch::Tensor counts = torch::tensor({num_batches, -num_batches}, torch::kInt64).to(root_device());
    sharded_->group().all_reduce(counts, ReduceOp::Max);
    most_evaluation_batches_ = counts[0].item<int64_t>();
    unit_evaluation_ = -counts[1].item<int64_t>() > 0;
  }
  if (!unit_evaluation_) {
    residency_->unshard_all();
    return;
  }
  evaluation_batches_ = num_batches;
  evaluation_sequence_.clear();
  residency_->unshard();
}

void FSDPStrategy::evaluation_batches_done() {
  if (!sharded_ || !unit_evaluation_) return;
  // A rank that ran fewer batches repeats its batches' gathers for the
  // others' remaining ones (every batch runs the same forwards), so they pair up.
  const size_t per_batch = evaluation_sequence_.size() / static_cast<size_t>(evaluation_batches_);
  for (int64_t batch = evaluation_batches_; batch < most_evaluation_batches_; ++batch) {
    for (size_t k = 0; k < per_batch; ++k) {
      residency_->unshard_unit(evaluation_sequence_[k]);
      residency_->free_unit(evaluation_sequence_[k]);
    }
  }
  unit_evaluation_ = false;
}

void FSDPStrategy::after_evaluation() {
  if (sharded_) residency_->reshard();
}

void FSDPStrategy::synchronize_gradients() {
  DataParallelStrategy::synchronize_gradients();
  if (sharded_) order_recorded_ = true;  // the first step showed the order of the units' forwards
}

void FSDPStrategy::average_gradients(const std::vector<torch::Tensor>& parameters) {
  if (!sharded_ || !pipelined()) {
    DataParallelStrategy::average_gradients(parameters);
    return;
  }
  // After a pipeline's schedule: every unit's gradients, accumulated whole
  // over the micro-batches, in one reduce-scatter each; the parameters
  // become their shards with the averaged gradient shards.
  sharded_->prepare(true);
  sharded_->finish();
}

bool FSDPStrategy::step(torch::optim::Optimizer& optimizer) {
  if (!sharded_) return Strategy::step(optimizer);
  // Manual optimization: gradients were averaged whole; slice them now.
  std::unordered_set<const void*> stepped;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) stepped.insert(p.unsafeGetTensorImpl());
  }
  sharded_->shard_from_whole(stepped);
  const bool result = Strategy::step(optimizer);
  sharded_->gather();
  return result;
}

void FSDPStrategy::clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  if (!sharded_ || algorithm == ClipAlgorithm::Value) {
    DataParallelStrategy::clip_unscaled_gradients(optimizer, value, algorithm);
    return;
  }
  // The global norm: squares of this rank's shards, plus (once, on the
  // group's rank 0) parameters every rank holds whole, summed over the
  // ranks that share the model (a node's under HYBRID_SHARD).
  ProcessGroup& shards = sharded_->group();
  clip_to_global_norm(
      optimizer, value, [&](const torch::Tensor& p) { return residency_->holds_shard(p) || shards.rank() == 0; },
      &shards);
}

torch::Tensor FSDPStrategy::whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) {
  // This replica's rows gathered first, then (under a mesh) the tp parts.
  return DataParallelStrategy::whole_tensor(param, data_parallel_whole_tensor(param, tensor));
}

torch::Tensor FSDPStrategy::data_parallel_whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) {
  return sharded_ ? residency_->whole_of(param, tensor) : tensor;
}

int64_t FSDPStrategy::whole_numel(const torch::Tensor& param) const {
  const auto shape = sharded_ ? layout_->whole_shape(param) : std::nullopt;
  if (!shape) return DataParallelStrategy::whole_numel(param);
  return std::accumulate(shape->begin(), shape->end(), int64_t{1}, std::multiplies<>()) * split_factor(param);
}

torch::Tensor FSDPStrategy::local_tensor(const torch::Tensor& param, const torch::Tensor& whole) const {
  const torch::Tensor tp_local = DataParallelStrategy::local_tensor(param, whole);
  return sharded_ ? layout_->shard_of(param, tp_local) : tp_local;
}

std::unique_ptr<GradientSynchronizer> FSDPStrategy::make_synchronizer(std::vector<torch::Tensor> parameters,
                                                                      std::vector<std::string> names) {
  return std::make_unique<GradientReducer>(std::move(parameters), std::move(names), *replicas(), ddp_options(),
                                           timeline());
}

}  // namespace fulgur
