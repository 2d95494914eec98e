#pragma once

#include <fulgur/strategies/sharding/sharded_unit_hooks.hpp>
#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/options/fsdp_options.hpp>
#include <fulgur/strategies/collectives/gradient_reducer.hpp>
#include <fulgur/strategies/sharding/sharded_reducer.hpp>

#include <map>
#include <memory>
#include <string>

namespace fulgur {

/// Fully sharded data parallelism: a DataParallelStrategy whose gradient
/// synchroniser is a ShardedReducer. It owns the ShardLayout (which rows a
/// rank holds, the units) and the UnitResidency (whole or sharded, the
/// gathers) that the reducer and its own unit hooks share. Each
/// rank reduce-scatters gradients to its shard of every parameter and
/// steps only that shard, so gradients and optimizer state take 1/N of
/// DDP's memory. SHARD_GRAD_OP all-gathers the step's result at once;
/// FULL_SHARD keeps parameters sharded between steps and all-gathers them
/// before the next forward (training, evaluation), dropping each unit's
/// whole parameters once its gradients are reduce-scattered. A submodule
/// wrapped in ShardedUnit is a unit of its own that its forward gathers
/// and frees (and the start of its backward gathers again), so whole
/// parameters exist for about one unit at a time; the rest is gathered
/// before the step's forward. Results equal DDP's. Under NO_SHARD it is DDP.
/// Under a pipeline (model_parallel, pp > 1) each stage is sharded over its
/// dp group: its units are gathered before the schedule and stay whole for
/// every micro-batch (ShardedUnits too), gradients accumulate whole, and
/// one reduce-scatter per unit after the schedule gives the shards the
/// optimizer steps.
class FSDPStrategy : public DataParallelStrategy, private ShardedUnitHooks {
 public:
  /// `data_parallel`: process group, ranks and timeline;
  /// `options`: the fsdp section; `ddp`: the buffer broadcast, NO_SHARD's
  /// gradient buckets and the unused-parameter switch;
  /// `shard_group_size`: HYBRID_SHARD's ranks per shard group (a node's),
  /// which must divide the world size.
  FSDPStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel,
               FSDPOptions options, DDPOptions ddp, int64_t shard_group_size);
  ~FSDPStrategy() override;

  std::string name() const override { return on_mesh() ? "model_parallel" : "fsdp"; }

  void setup_environment() override;
  void setup(LightningModule& module) override;
  void teardown() override;

  void before_training_step() override;
  void before_evaluation(int64_t num_batches) override;
  void evaluation_batches_done() override;
  void after_evaluation() override;
  /// Under a pipeline (the step after its schedule): each unit's whole
  /// gradients reduce-scattered to this rank's shard. Else as DataParallelStrategy.
  void average_gradients(const std::vector<torch::Tensor>& parameters) override;

  bool shards_parameters() const override {
    return (residency_ != nullptr && residency_->reshards()) || DataParallelStrategy::shards_parameters();
  }
  bool shards_optimizer_state() const override {
    return sharded_ != nullptr || DataParallelStrategy::shards_optimizer_state();
  }
  torch::Tensor whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) override;
  torch::Tensor data_parallel_whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) override;
  torch::Tensor local_tensor(const torch::Tensor& param, const torch::Tensor& whole) const override;
  int64_t whole_numel(const torch::Tensor& param) const override;

  ShardingStrategy sharding() const { return sharding_; }
  /// fsdp's own (`fsdp.state_dict_type`), or a mesh's (`model_parallel.state_dict_type`).
  bool sharded_state_dict() const override {
    return options_.state_dict_type() == StateDictType::Sharded || DataParallelStrategy::sharded_state_dict();
  }
  /// The parts of the sharded modes; null under NO_SHARD and outside a run.
  const ShardLayout* shard_layout() const override { return layout_.get(); }
  const UnitResidency* residency() const { return residency_.get(); }
  const ShardedReducer* sharded_reducer() const { return sharded_; }

 protected:
  void synchronize_gradients() override;
  bool step(torch::optim::Optimizer& optimizer) override;
  void clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) override;
  /// NO_SHARD: DDP's GradientReducer.
  std::unique_ptr<GradientSynchronizer> make_synchronizer(std::vector<torch::Tensor> parameters,
                                                          std::vector<std::string> names) override;

 private:
  void before_forward(const torch::nn::Module& unit) override;
  void after_forward(const torch::nn::Module& unit, const std::vector<torch::Tensor>& outputs) override;
  /// A ShardedUnit's output received its gradient: gather the unit, prefetch the one before it.
  void before_unit_backward(size_t index);
  /// Drops the reducer, the residency and the layout, in that order.
  void release_shards();

  FSDPOptions options_;
  int64_t shard_group_size_;
  ShardingStrategy sharding_;
  std::map<const torch::nn::Module*, size_t> hooked_units_;  // ShardedUnit -> its unit
  std::vector<ShardedUnitBase*> hooked_;
  // FULL_SHARD prefetch: the ShardedUnits' units in the order the first
  // step's forward ran them; later steps gather the next one early.
  std::vector<size_t> forward_order_;
  bool order_recorded_ = false;
  // Evaluation: ShardedUnits gathered by their forwards (in this order on
  // this rank), so a rank with fewer batches than the most any rank runs
  // can repeat its gathers for the others' remaining batches.
  bool unit_evaluation_ = false;
  std::vector<size_t> evaluation_sequence_;
  int64_t evaluation_batches_ = 0;
  int64_t most_evaluation_batches_ = 0;
  // The sharded modes, from setup to teardown: the reducer (the
  // synchroniser) uses the layout and the residency, so it goes first.
  std::unique_ptr<ShardLayout> layout_;
  std::unique_ptr<UnitResidency> residency_;
  ShardedReducer* sharded_ = nullptr;
  // HYBRID_SHARD: this rank's node (shards) and the ranks holding its rows on the other nodes.
  std::unique_ptr<ProcessGroup> shard_group_;
  std::unique_ptr<ProcessGroup> replica_group_;
};

}  // namespace fulgur
