#pragma once

#include <fulgur/strategies/sharding/tensor_pool.hpp>

#include <fulgur/strategies/collectives/gradient_ready_hooks.hpp>
#include <fulgur/strategies/collectives/gradient_synchronizer.hpp>
#include <fulgur/strategies/sharding/shard_layout.hpp>
#include <fulgur/strategies/sharding/unit_residency.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace c10d {
class Work;
}

namespace fulgur {

class ProcessGroup;

/// The gradient path of the fully sharded strategy (ZeRO-2), over the
/// strategy's ShardLayout (which rows a rank holds, the units) and
/// UnitResidency (whole or sharded parameters, the gathers), which it uses
/// but does not own: each unit's gradients go in
/// one flat reduce-scatter, started from the post-accumulate-grad hooks as
/// soon as all of them exist (overlapping the rest of backward), at most
/// two at once so a whole model's gradients never wait together.
///
/// The module's parameter tensors are kept (same TensorImpl, so an
/// optimizer's state keys stay valid); finish() points their data at this
/// rank's rows and their .grad at the averaged gradient shard, so any
/// torch::optim optimizer steps (and keeps state for) the shard only.
class ShardedReducer : public GradientSynchronizer {
 public:
  struct Options {
    /// Parameters without a gradient in a step count as zero instead of
    /// being an error.
    bool find_unused_parameters = false;
    /// Reduce-scatter from backward hooks (automatic optimization). Without
    /// them (manual optimization) gradients are averaged whole and
    /// shard_from_whole() slices them.
    bool hooks = true;
    /// Without hooks: after the step FULL_SHARD makes every unit whole at
    /// once (manual optimization may run a forward right after a step).
    /// A pipeline leaves it to the next step's gather (before_training_step).
    bool unshard_after_step = true;
    /// HYBRID_SHARD: the ranks that hold the same rows as this one (one per
    /// node); each unit's gradient shard is averaged over them once its
    /// reduce-scatter within `group` is done. Null: `group` is every rank.
    ProcessGroup* replicas = nullptr;
  };

  /// `layout` and `residency` (over `group`) outlive the reducer.
  ShardedReducer(const ShardLayout& layout, UnitResidency& residency, ProcessGroup& group, Options options);
  ~ShardedReducer() override;
  ShardedReducer(const ShardedReducer&) = delete;
  ShardedReducer& operator=(const ShardedReducer&) = delete;

  /// Before backward (parameters whole): `sync` false skips communication
  /// and lets gradients accumulate whole (accumulation steps).
  void prepare(bool sync) override;
  /// After backward: waits for the reduce-scatters; every parameter then
  /// holds its shard, with the averaged gradient shard as .grad. Without
  /// hooks it reduce-scatters every unit's accumulated gradients here (a
  /// pipeline's micro-batches). Once per prepare(): a second call does nothing.
  void finish() override;
  /// Manual optimization: the units holding any of `params` become shards,
  /// their gradients (already averaged whole) sliced to this rank's rows.
  void shard_from_whole(const std::unordered_set<const void*>& params);
  /// After the step: parameters are whole again (SHARD_GRAD_OP) or stay
  /// shards until the next forward gathers them (FULL_SHARD), without gradients.
  void gather();

  /// The ranks the parameters are sharded over (all of them but under HYBRID_SHARD).
  ProcessGroup& group() const { return group_; }

  /// The gradient shard buffers, one per unit that has reduced gradients.
  std::vector<torch::Tensor> held_tensors() const override;
  /// The most reduce-scatters (whole gradients of a unit each) running at once so far.
  int64_t peak_reductions_in_flight() const { return peak_reductions_; }
  /// Units whose reduce-scatter started during backward in the last step.
  int64_t units_launched_in_backward() const { return launched_in_backward_; }

 private:
  struct Unit {
    int64_t pending = 0;
    torch::Tensor grad;   // this rank's averaged gradient chunk, from its first reduction
    torch::Tensor input;  // while reducing: the reduce-scatter's input, every rank's chunk (from buffers_)
    c10::intrusive_ptr<c10d::Work> work;
    c10::intrusive_ptr<c10d::Work> replica_work;  // HYBRID_SHARD: the shard's allreduce over the replicas
  };
  static constexpr size_t kReductionsInFlight = 2;

  void on_gradient_ready(size_t k);
  void launch_ready_units();
  void launch_reduce_scatter(size_t unit);
  /// The unit's gradient chunk and its parameters' views of it, made at the
  /// first reduction: setting up holds no gradient memory.
  void allocate_gradient(size_t unit);
  /// Waits for the oldest reduce-scatters until at most `in_flight` are
  /// running, and drops the inputs of every finished one: each is a whole
  /// unit's gradients, so holding them all to the end of backward would
  /// cost a whole model's gradients (what sharding saves).
  void settle_reductions(size_t in_flight);
  /// The unit's parameters become their shards, with the gradient shards as .grad.
  void become_shards(size_t unit);

  const ShardLayout& layout_;
  UnitResidency& residency_;
  ProcessGroup& group_;
  Options options_;
  std::vector<torch::Tensor> grad_shards_;  // per parameter: a view of its unit's gradient chunk
  std::vector<Unit> units_;
  TensorPool buffers_;  // the collectives' flat buffers, reused step after step
  size_t next_to_launch_ = 0;
  std::deque<size_t> reducing_;  // units whose reduce-scatter runs, oldest first
  int64_t peak_reductions_ = 0;
  bool syncing_ = false;
  bool in_backward_ = false;
  int64_t launched_in_backward_ = 0;
  std::optional<GradientReadyHooks> hooks_;  // by parameter index
};

}  // namespace fulgur
