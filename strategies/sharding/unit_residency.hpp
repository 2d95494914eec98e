#pragma once

#include <fulgur/strategies/sharding/tensor_pool.hpp>

#include <fulgur/strategies/sharding/shard_layout.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace c10d {
class Work;
}

namespace fulgur {

class ProcessGroup;

/// Where a sharding strategy's parameters live: each unit is whole (the
/// module's parameters point at their whole values) or sharded (at this
/// rank's rows, which the optimizer steps). Makes units whole with one flat
/// all-gather each (started early as a prefetch, or when needed), makes
/// them shards again, and keeps the bookkeeping of units that their own
/// forward gathers (ShardedUnit) and of the most units whole at once.
///
/// With `reshard` (FULL_SHARD) a parameter owns only its rows between
/// steps: its rows get storage of their own at construction and the whole
/// value goes; a gathered unit's whole values live in one buffer whose
/// memory is freed again while its storage object stays, so tensors
/// autograd saved in the forward see the values once it is refilled.
/// Without it (SHARD_GRAD_OP) every whole value stays allocated, shards are
/// views of it, and gather() refills it after the step.
///
/// FULL_SHARD gathers a parameter of at least kDirectBytes whose rows split
/// evenly over the ranks by itself, straight from its rows into its whole
/// value: every rank's rows are one block there, in rank order, so nothing
/// is copied before or after (copies were most of what FULL_SHARD added to
/// ddp's step on a CPU: bench/RESULTS.md). The unit's other parameters
/// travel packed in one flat all-gather.
class UnitResidency {
 public:
  UnitResidency(const ShardLayout& layout, ProcessGroup& group, bool reshard);
  /// Left mid-step by an error (SHARD_GRAD_OP): parameters are whole again.
  ~UnitResidency();
  UnitResidency(const UnitResidency&) = delete;
  UnitResidency& operator=(const UnitResidency&) = delete;

  bool reshards() const { return reshard_; }
  bool sharded(size_t unit) const { return units_[unit].sharded; }
  /// Whether `param` now holds only this rank's rows.
  bool holds_shard(const torch::Tensor& param) const;
  /// This rank's rows of parameter `param` (an index of the layout's params()).
  const torch::Tensor& shard(size_t param) const { return shards_[param]; }

  /// The unit's parameters point at their rows; FULL_SHARD frees their whole values.
  void become_shards(size_t unit);
  /// After the step: SHARD_GRAD_OP all-gathers every sharded unit (all
  /// started, then waited in order) and drops the gradients of those; FULL_SHARD
  /// keeps the shards (the next forward gathers) and drops every gradient,
  /// then makes everything whole at once when `unshard_now` (manual
  /// optimization may run a forward right after a step).
  void gather(bool unshard_now);
  /// FULL_SHARD, before a forward: every sharded unit but those their own
  /// forward gathers is made whole (all started, then waited in order).
  void unshard();
  /// FULL_SHARD, before evaluation (and after a run): every unit is made whole.
  void unshard_all();
  /// FULL_SHARD, after evaluation: every unit holds its shard again (no communication).
  void reshard();
  /// FULL_SHARD: all-gathers one unit now (blocking); a no-op when it is whole.
  void unshard_unit(size_t unit);
  /// FULL_SHARD: starts the all-gather of a sharded unit that unshard_unit()
  /// then only waits for, so the transfer overlaps the compute before it.
  /// Every rank prefetches the same units in the same order.
  void prefetch_unit(size_t unit);
  /// Waits for the unit's all-gather if one was prefetched and not used, and drops its buffers.
  void drop_prefetch(size_t unit);
  /// FULL_SHARD: the unit holds its shard again and frees its whole values;
  /// not while a gradient accumulates whole (accumulation steps).
  void free_unit(size_t unit);
  /// FULL_SHARD: `unit` is gathered by its module's forward, not by unshard().
  void set_forward_gathered(size_t unit) { units_.at(unit).forward_gathered = true; }
  bool forward_gathered(size_t unit) const { return units_[unit].forward_gathered; }

  /// The whole tensor of `state`: the parameter itself by its unit's state,
  /// or a tensor shaped like its shard (an optimizer's moment); one
  /// all-gather, so every rank calls it in the same order. Anything else is
  /// returned as it is.
  torch::Tensor whole_of(const torch::Tensor& param, const torch::Tensor& state);
  /// FULL_SHARD: the most units whole at once (after any all-gather), evaluation included.
  int64_t peak_whole_units() const { return peak_whole_units_; }

 private:
  /// Bytes from which a parameter whose rows split evenly is gathered by itself.
  static constexpr int64_t kDirectBytes = int64_t{256} << 10;

  struct Unit {
    bool sharded = false;
    bool forward_gathered = false;  // gathered by its ShardedUnit's forward
    bool gathering = false;         // all-gathers run (works)
    torch::Tensor input;            // while gathering: this rank's packed chunk (from buffers_)
    torch::Tensor gathered;         // while gathering: every rank's packed chunk (from buffers_)
    torch::Tensor full;  // FULL_SHARD: every parameter's whole value, one after another; 0 bytes while sharded
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    std::vector<size_t> packed;  // parameters that travel packed in one all-gather
    std::vector<size_t> direct;  // parameters gathered by themselves into their whole values
    int64_t packed_numel = 0;    // elements of one rank's packed chunk
  };
  void start_all_gather(size_t unit);
  /// Waits for the unit's all-gathers.
  void finish_all_gather(size_t unit);
  void finish_unshard(size_t unit);
  /// FULL_SHARD: the unit's whole values get memory (made on first use).
  void allocate_full(size_t unit);
  /// Copies the packed parameters' gathered rows of every rank (all but
  /// this rank's when `skip_own`: they are already there) into the unit's
  /// whole values, which the module's tensors then point at.
  void copy_gathered_rows(size_t unit, bool skip_own);

  const ShardLayout& layout_;
  ProcessGroup& group_;
  bool reshard_;
  std::vector<torch::Tensor> whole_;   // per parameter (FULL_SHARD: only while its unit is whole)
  std::vector<torch::Tensor> shards_;  // per parameter: a view of its whole value, or (FULL_SHARD) its own
  std::vector<int64_t> packed_offset_;  // per parameter: its place in its unit's packed chunk
  std::vector<Unit> units_;
  TensorPool buffers_;  // the collectives' flat buffers, reused step after step
  int64_t peak_whole_units_ = 0;
};

}  // namespace fulgur
