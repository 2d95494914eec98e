#pragma once

#include <fulgur/strategies/model_parallel/parallel_style.hpp>

#include <torch/torch.h>

#include <memory>

namespace fulgur {

class ProcessGroup;

/// torch::nn::Linear that a ParallelPlan can split over the tensor-parallel
/// ranks. LibTorch modules have no forward hooks, so the layers a plan
/// splits are declared with this type (same options, parameters and
/// state-dict names as torch::nn::Linear); until a plan splits it, and on
/// one process, it computes exactly what torch::nn::Linear does.
class ShardableLinearImpl : public torch::nn::LinearImpl {
 public:
  using torch::nn::LinearImpl::LinearImpl;

  torch::Tensor forward(const torch::Tensor& input);
  /// Keeps this rank's rows (Colwise) or columns (Rowwise) of the weight;
  /// parallelize_module calls it. The layer holds `group` from then on.
  void shard(const ParallelStyle& style, std::shared_ptr<ProcessGroup> group);
  /// The dimension of the weight that is split, or -1 when it is whole.
  int64_t weight_shard_dim() const;
  const ParallelStyle& style() const { return style_; }

 private:
  ParallelStyle style_;
  std::shared_ptr<ProcessGroup> group_;
};
TORCH_MODULE(ShardableLinear);

}  // namespace fulgur
