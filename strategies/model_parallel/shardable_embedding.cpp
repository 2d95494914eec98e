#include <fulgur/strategies/model_parallel/shardable_embedding.hpp>

#include <fulgur/strategies/model_parallel/tensor_parallel_ops.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

void ShardableEmbeddingImpl::shard(const ParallelStyle& style, std::shared_ptr<ProcessGroup> group) {
  if (group_) throw std::logic_error("the embedding is split already");
  if (style.kind == ParallelStyle::Kind::Sequence) throw std::invalid_argument("SequenceParallel does not split an Embedding");
  if (options.padding_idx() || options.max_norm()) {
    throw std::invalid_argument("an Embedding with padding_idx or max_norm cannot be split");
  }
  if (style.input.sharded) throw std::invalid_argument("an Embedding's input (the indices) is Replicate()");
  const bool vocabulary = style.kind == ParallelStyle::Kind::Rowwise;
  if (!vocabulary && style.output.sharded && style.output.dim != -1) {
    throw std::invalid_argument("ColwiseParallel's output is Shard(-1) (its features) or Replicate()");
  }
  const int64_t n = group->size();
  const int64_t dim = vocabulary ? 0 : 1;  // the weight is [num_embeddings, embedding_dim]
  const int64_t whole = weight.size(dim);
  if (whole % n != 0) {
    throw std::invalid_argument(fmt::format("{} {} cannot be split evenly over tensor_parallel_size {}",
                                            vocabulary ? "num_embeddings" : "embedding_dim", whole, n));
  }
  torch::NoGradGuard no_grad;
  weight.set_data(weight.narrow(dim, group->rank() * (whole / n), whole / n).clone());
  style_ = style;
  group_ = std::move(group);
}

int64_t ShardableEmbeddingImpl::weight_shard_dim() const {
  if (!group_) return -1;
  return style_.kind == ParallelStyle::Kind::Rowwise ? 0 : 1;
}

torch::Tensor ShardableEmbeddingImpl::forward(const torch::Tensor& indices) {
  if (!group_) return torch::nn::EmbeddingImpl::forward(indices);
  ProcessGroup& g = *group_;
  if (style_.kind == ParallelStyle::Kind::Colwise) {
    const torch::Tensor y = torch::embedding(weight, indices);
    return style_.output.sharded ? y : gather_from_group(y, -1, g);
  }
  // This rank's rows of the vocabulary: other indices look up zeros, and
  // the sum over the ranks leaves each index its one row.
  const int64_t rows = weight.size(0);
  const int64_t start = g.rank() * rows;
  const torch::Tensor elsewhere = (indices < start) | (indices >= start + rows);
  torch::Tensor y = torch::embedding(weight, (indices - start).masked_fill(elsewhere, 0));
  y = y.masked_fill(elsewhere.unsqueeze(-1), 0.0);
  return style_.output.sharded ? reduce_scatter_sequence(y, style_.output.dim, g) : reduce_from_group(y, g);
}

}  // namespace fulgur
