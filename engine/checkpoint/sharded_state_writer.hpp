#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <functional>
#include <vector>

namespace fulgur {

class ShardLayout;
class Strategy;

/// The checkpoints of a run whose strategy shards parameters and optimizer
/// state (fsdp): every rank calls each method with its own dump of the
/// trainer's state, as the collectives pair up.
/// - `fsdp.state_dict_type: full`: gather_whole() makes the sharded tensors
///   whole, one all-gather each, so no rank holds the whole model twice;
///   rank 0 then writes the usual checkpoint.
/// - `sharded`: save_sharded() writes every rank's rows beside rank 0's
///   metadata (the layout is in sharded_checkpoint.hpp).
class ShardedStateWriter {
 public:
  /// `module`'s parameters and `optimizers` (in the checkpoint's order) are
  /// those `layout` shards over the strategy's ranks (null: parameters a
  /// model_parallel plan split over tp, which gather_whole gathers too; no
  /// save_sharded).
  ShardedStateWriter(Strategy& strategy, const ShardLayout* layout, const torch::nn::Module& module,
                     std::vector<const torch::optim::Optimizer*> optimizers);

  /// Replaces the sharded tensors of `checkpoint` by whole ones; only rank 0 keeps them.
  void gather_whole(Checkpoint& checkpoint) const;
  /// Under fsdp along a mesh's dp: replaces them by this rank's tp slices,
  /// whole over dp; only the ranks that write a mesh's parts (dp and cp
  /// rank 0, MeshShardedCheckpoint) keep them.
  void gather_slices(Checkpoint& checkpoint) const;
  /// Writes this rank's shard of `checkpoint` (under HYBRID_SHARD: the first
  /// node's ranks), then, once every shard is on disk, rank 0 the metadata
  /// at `path`. Throws CheckpointError on every rank when any failed.
  void save_sharded(Checkpoint checkpoint, const std::filesystem::path& path) const;

 private:
  /// gather_whole and gather_slices: each sharded tensor through `gather`
  /// (a collective: every rank, the same tensors in the same order).
  void gather(Checkpoint& checkpoint, bool keep,
              const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& gather) const;

  Strategy& strategy_;
  const ShardLayout* layout_;
  const torch::nn::Module& module_;
  std::vector<const torch::optim::Optimizer*> optimizers_;
};

}  // namespace fulgur
