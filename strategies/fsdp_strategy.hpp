#pragma once

#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/sharded_reducer.hpp>

#include <memory>
#include <string>

namespace fulgur {

/// What the fully sharded strategy splits over the ranks (Lightning's names).
enum class ShardingStrategy {
  /// ZeRO-2: gradients and optimizer state sharded; parameters stay whole.
  ShardGradOp,
  /// Nothing sharded: DDP's gradient path.
  NoShard,
};

/// "SHARD_GRAD_OP" or "NO_SHARD"; throws std::invalid_argument naming the allowed ones.
ShardingStrategy sharding_strategy(const std::string& name);

struct FSDPStrategyOptions {
  /// Process group, ranks, buffer broadcast, DDP reducer (NO_SHARD), as for DDP.
  DDPStrategyOptions ddp;
  ShardingStrategy sharding = ShardingStrategy::ShardGradOp;
  /// The wrap policy and unused-parameter handling of the sharded path.
  ShardedReducer::Options sharded;
};

/// Fully sharded data parallelism in its ZeRO-2 form: the data-parallel
/// base of DDPStrategy (process group, replicas that start equal, buffer
/// broadcast, collectives for metrics) with a ShardedReducer as the
/// gradient synchroniser. Each rank reduce-scatters gradients to its shard
/// of every parameter and steps only that shard, so gradients and optimizer
/// state take 1/N of DDP's memory; the step's result is all-gathered
/// before the next forward. Results equal DDP's. Under NO_SHARD it is DDP.
class FSDPStrategy : public DDPStrategy {
 public:
  FSDPStrategy(Accelerator accelerator, PrecisionMode precision, FSDPStrategyOptions options);
  ~FSDPStrategy() override;

  std::string name() const override { return "fsdp"; }

  void setup(LightningModule& module) override;
  void teardown() override;

  void backward(const torch::Tensor& loss, bool sync_gradients) override;
  void synchronize_gradients() override;
  bool optimizer_step(torch::optim::Optimizer& optimizer) override;
  void clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) override;

  bool shards_optimizer_state() const override { return sharded_ != nullptr; }
  torch::Tensor whole_optimizer_state(const torch::Tensor& param, const torch::Tensor& state) override;
  torch::Tensor local_optimizer_state(const torch::Tensor& param, const torch::Tensor& whole) const override;

  ShardingStrategy sharding() const { return options_.sharding; }
  /// The sharded gradient path; null under NO_SHARD and before setup.
  const ShardedReducer* sharded_reducer() const { return sharded_.get(); }

 private:
  FSDPStrategyOptions options_;
  std::unique_ptr<ShardedReducer> sharded_;
  bool automatic_ = true;
};

}  // namespace fulgur
