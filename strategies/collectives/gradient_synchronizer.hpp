#pragma once

#include <torch/torch.h>

#include <vector>

namespace fulgur {

/// What tells the data-parallel strategies apart: how the gradients of one
/// backward become the same on every rank. DDP's GradientReducer (bucketed
/// allreduce), Horovod's HorovodController (fusion, ring allreduce on a
/// thread) and FSDP's ShardedReducer (reduce-scatter to shards) implement
/// it; DataParallelStrategy calls it around every backward.
class GradientSynchronizer {
 public:
  virtual ~GradientSynchronizer() = default;
  /// Before backward: `sync` false skips communication (accumulation steps).
  virtual void prepare(bool sync) = 0;
  /// After backward, before the optimizer: waits until gradients are synchronised.
  virtual void finish() = 0;
  /// Tensors it keeps between steps besides the parameters' own .grad
  /// (buckets, gradient shards): counted by training_state_bytes.
  virtual std::vector<torch::Tensor> held_tensors() const { return {}; }
};

}  // namespace fulgur
