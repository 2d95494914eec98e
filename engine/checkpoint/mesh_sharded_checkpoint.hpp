#pragma once

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <vector>

namespace fulgur {

class Strategy;

/// Sharded checkpoints of a mesh (`model_parallel.state_dict_type:
/// sharded`, ddp along dp): no rank gathers anything. The ranks of dp 0
/// and cp 0 write the parts they hold (their stages' layers under a
/// pipeline, their tp slices) beside rank 0's metadata (the layout is in
/// sharded_checkpoint.hpp); consolidate_sharded_checkpoint() joins them
/// into one process's checkpoint, which any mesh loads. Every rank makes
/// and calls it alike (the constructor is a collective under a pipeline).
class MeshShardedCheckpoint {
 public:
  MeshShardedCheckpoint(Strategy& strategy, torch::nn::Module& module,
                        std::vector<const torch::optim::Optimizer*> optimizers);

  /// Writes this rank's part of `checkpoint` (its own dump), then rank 0
  /// the metadata at `path` once every part is on disk. Throws
  /// CheckpointError on every rank when any failed.
  void save(Checkpoint checkpoint, const std::filesystem::path& path) const;

 private:
  Strategy& strategy_;
  torch::nn::Module& module_;
  std::vector<const torch::optim::Optimizer*> optimizers_;
  std::vector<std::vector<std::string>> whole_names_;  // per optimizer: one process's numbering
};

}  // namespace fulgur
