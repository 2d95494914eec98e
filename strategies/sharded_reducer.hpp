#pragma once

#include <fulgur/strategies/gradient_ready_hooks.hpp>
#include <fulgur/strategies/gradient_synchronizer.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace c10d {
class Work;
}

namespace fulgur {

class ProcessGroup;

/// The gradient path of the fully sharded strategy (ZeRO-2): every
/// parameter is split along dim 0 into world-size chunks of
/// ceil(rows / world) rows; rank r owns rows [r*c, (r+1)*c) (the last ranks
/// may own fewer, or none). Parameters are grouped into units (the wrap
/// policy); a unit is the communication granularity: one flat
/// reduce-scatter of its gradients, started from the post-accumulate-grad
/// hooks as soon as all of them exist (overlapping the rest of backward),
/// and one flat all-gather of its parameters after the step.
///
/// The module's parameter tensors are kept (same TensorImpl, so an
/// optimizer's state keys stay valid); finish() points their data at this
/// rank's rows and their .grad at the averaged gradient shard, so any
/// torch::optim optimizer steps (and keeps state for) the shard only.
///
/// Without `reshard_parameters` (SHARD_GRAD_OP) each whole parameter stays
/// allocated and gather() refills it after the step: between steps
/// parameters are whole. With it (FULL_SHARD) a parameter owns only its
/// rows between steps; unshard() all-gathers a unit into a fresh buffer
/// before a forward and finish() drops that buffer once the unit's
/// gradients are reduce-scattered, so whole parameters exist only from the
/// forward to the end of backward.
class ShardedReducer : public GradientSynchronizer {
 public:
  struct Options {
    /// A unit closes at a module boundary once it holds this many elements.
    int64_t min_unit_numel = 1000000;
    /// Submodules (by name) that are each one unit.
    std::vector<std::string> unit_modules;
    /// Parameters without a gradient in a step count as zero instead of
    /// being an error.
    bool find_unused_parameters = false;
    /// Reduce-scatter from backward hooks (automatic optimization). Without
    /// them (manual optimization) gradients are averaged whole and
    /// shard_from_whole() slices them.
    bool hooks = true;
    /// FULL_SHARD: parameters hold only this rank's rows between steps.
    bool reshard_parameters = false;
    /// HYBRID_SHARD: the ranks that hold the same rows as this one (one per
    /// node); each unit's gradient shard is averaged over them once its
    /// reduce-scatter within `group` is done. Null: `group` is every rank.
    ProcessGroup* replicas = nullptr;
  };

  ShardedReducer(std::vector<torch::Tensor> parameters, std::vector<std::string> names, ProcessGroup& group,
                 Options options);
  ~ShardedReducer() override;
  ShardedReducer(const ShardedReducer&) = delete;
  ShardedReducer& operator=(const ShardedReducer&) = delete;

  /// Before backward (parameters whole): `sync` false skips communication
  /// and lets gradients accumulate whole (accumulation steps).
  void prepare(bool sync) override;
  /// After backward: waits for the reduce-scatters; every parameter then
  /// holds its shard, with the averaged gradient shard as .grad.
  void finish() override;
  /// Manual optimization: the units holding any of `params` become shards,
  /// their gradients (already averaged whole) sliced to this rank's rows.
  void shard_from_whole(const std::unordered_set<const void*>& params);
  /// After the step: every sharded unit is all-gathered (all started, then
  /// waited in order); parameters are whole again and have no gradient.
  void gather();
  /// FULL_SHARD, before a forward: every unit that holds shards, except
  /// those gathered by their own forward (forward_gathered), is
  /// all-gathered (all started, then waited in order) and made whole.
  void unshard();
  /// FULL_SHARD, before evaluation (and after a run): every unit, those
  /// of ShardedUnits too, is made whole, one all-gather each.
  void unshard_all();
  /// FULL_SHARD, after evaluation: every unit frees its whole parameters
  /// and holds its shard again (no communication).
  void reshard();
  /// The unit of the submodule named `module` (listed in unit_modules).
  std::optional<size_t> unit_of_module(const std::string& module) const;
  /// FULL_SHARD: `unit` is gathered by its module's forward (ShardedUnit),
  /// not by unshard().
  void set_forward_gathered(size_t unit);
  /// FULL_SHARD: all-gathers one unit now (blocking) and makes it whole; a
  /// no-op when it is whole.
  void unshard_unit(size_t unit);
  /// FULL_SHARD: starts the all-gather of a sharded unit that its
  /// unshard_unit() then only waits for (FSDP's forward and backward
  /// prefetch), so the transfer overlaps the compute before it. Every rank
  /// prefetches the same units in the same order.
  void prefetch_unit(size_t unit);
  /// FULL_SHARD: one unit holds its shard again and frees the memory of its
  /// whole parameters, keeping their storage object, so tensors autograd
  /// saved in the forward see the values again once unshard_unit refills it.
  /// Not while a gradient accumulates whole (accumulation steps).
  void free_unit(size_t unit);
  bool reshards_parameters() const { return options_.reshard_parameters; }

  /// Whether `param` now holds only this rank's rows.
  bool holds_shard(const torch::Tensor& param) const;
  /// The whole tensor of a state tensor shaped like `param`'s shard (an
  /// optimizer's moment); one all-gather, so every rank calls it in the same
  /// order. Anything else is returned as it is.
  torch::Tensor whole_of(const torch::Tensor& param, const torch::Tensor& state);
  /// This rank's rows of `whole` if it is shaped like `param`, else `whole`.
  torch::Tensor shard_of(const torch::Tensor& param, const torch::Tensor& whole) const;

  int64_t num_units() const { return static_cast<int64_t>(units_.size()); }
  /// The names of the parameters of every unit, in launch order.
  std::vector<std::vector<std::string>> unit_parameter_names() const;
  /// The whole shape of `param`, or nullopt when it is not sharded.
  std::optional<std::vector<int64_t>> whole_shape(const torch::Tensor& param) const;
  /// Rows of `param` (dim 0) this rank owns, or nullopt when it is not sharded.
  std::optional<int64_t> local_rows(const torch::Tensor& param) const;
  /// The gradient shard buffers, one per unit that has reduced gradients.
  std::vector<torch::Tensor> held_tensors() const override;
  /// Elements of the largest unit (whole): what FULL_SHARD holds at most
  /// beyond its shards per unit in flight.
  int64_t largest_unit_numel() const;
  /// The ranks the parameters are sharded over (all of them but under HYBRID_SHARD).
  ProcessGroup& group() const { return group_; }
  /// FULL_SHARD: the most units whole at once (after any all-gather), evaluation included.
  int64_t peak_whole_units() const { return peak_whole_units_; }
  /// The most reduce-scatters (whole gradients of a unit each) running at once so far.
  int64_t peak_reductions_in_flight() const { return peak_reductions_; }
  /// Units whose reduce-scatter started during backward in the last step.
  int64_t units_launched_in_backward() const { return launched_in_backward_; }

 private:
  struct Param {
    torch::Tensor tensor;  // the module's parameter: its TensorImpl never changes
    torch::Tensor whole;   // its whole value (FULL_SHARD: only while its unit is whole)
    std::vector<int64_t> shape;  // of the whole value
    std::string name;
    int64_t rows = 1, row_numel = 1, chunk_rows = 1, local_rows = 0;
    size_t unit = 0;
    int64_t offset = 0;  // in the unit's padded per-rank chunk
    torch::Tensor shard;       // its rows: a view of `whole`, or (FULL_SHARD) its own tensor
    torch::Tensor grad_shard;  // a view of the unit's gradient chunk
  };
  struct Unit {
    std::vector<size_t> params;
    int64_t chunk_numel = 0;  // padded elements per rank
    int64_t pending = 0;
    bool sharded = false;
    bool forward_gathered = false;  // gathered by its ShardedUnit's forward
    bool gathering = false;         // an all-gather into `comm` runs (work)
    torch::TensorOptions options;  // of its parameters
    torch::Tensor grad;         // this rank's averaged gradient chunk, from its first reduction
    torch::Tensor comm;         // transient: reduce-scatter input / all-gather output
    torch::Tensor comm_input;   // transient: all-gather input
    torch::Tensor full;         // FULL_SHARD: every parameter's whole value, one after another; 0 bytes while sharded
    c10::intrusive_ptr<c10d::Work> work;
    c10::intrusive_ptr<c10d::Work> replica_work;  // HYBRID_SHARD: the shard's allreduce over the replicas
  };
  /// Copies the all-gathered rows of every rank (all but this rank's when
  /// `skip_own`: they are already there) into the unit's whole parameters,
  /// which the module's tensors then point at.
  void copy_gathered_rows(Unit& unit, bool skip_own);

  void build_units(int64_t world);
  void on_gradient_ready(size_t k);
  void launch_ready_units();
  void launch_reduce_scatter(Unit& unit);
  /// The unit's gradient chunk and its parameters' views of it, made at the
  /// first reduction: setting up holds no gradient memory.
  void allocate_gradient(Unit& unit);
  /// Waits for the oldest reduce-scatters until at most `in_flight` are
  /// running, and drops the inputs of every finished one: each is a whole
  /// unit's gradients, so holding them all to the end of backward would
  /// cost a whole model's gradients (what sharding saves).
  void settle_reductions(size_t in_flight);
  /// Waits for the unit's all-gather if one was prefetched and not used, and drops its buffers.
  void drop_prefetch(Unit& unit);
  static constexpr size_t kReductionsInFlight = 2;
  void become_shards(Unit& unit);
  void start_all_gather(Unit& unit);
  void finish_unshard(Unit& unit);
  const Param* find(const torch::Tensor& param) const;

  std::vector<Param> params_;
  ProcessGroup& group_;
  Options options_;
  std::vector<Unit> units_;
  std::map<std::string, size_t> module_units_;
  size_t next_to_launch_ = 0;
  std::deque<size_t> reducing_;  // units whose reduce-scatter runs, oldest first
  int64_t peak_reductions_ = 0;
  bool syncing_ = false;
  bool in_backward_ = false;
  int64_t launched_in_backward_ = 0;
  int64_t peak_whole_units_ = 0;
  std::optional<GradientReadyHooks> hooks_;  // by parameter index
};

}  // namespace fulgur
