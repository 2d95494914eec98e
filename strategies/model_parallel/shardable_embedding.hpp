#pragma once

#include <fulgur/strategies/model_parallel/parallel_style.hpp>

#include <torch/torch.h>

#include <memory>

namespace fulgur {

class ProcessGroup;

/// torch::nn::Embedding that a ParallelPlan can split over the
/// tensor-parallel ranks: RowwiseParallel splits the vocabulary (each rank
/// looks up the indices it holds, the rows are summed over the ranks: the
/// vocab-parallel embedding), ColwiseParallel the embedding dimension.
/// Until a plan splits it, it computes exactly what torch::nn::Embedding does.
class ShardableEmbeddingImpl : public torch::nn::EmbeddingImpl {
 public:
  using torch::nn::EmbeddingImpl::EmbeddingImpl;

  torch::Tensor forward(const torch::Tensor& indices);
  void shard(const ParallelStyle& style, std::shared_ptr<ProcessGroup> group);
  int64_t weight_shard_dim() const;
  const ParallelStyle& style() const { return style_; }

 private:
  ParallelStyle style_;
  std::shared_ptr<ProcessGroup> group_;
};
TORCH_MODULE(ShardableEmbedding);

}  // namespace fulgur
