#include <fulgur/strategies/model_parallel/shardable_linear.hpp>

#include <fulgur/strategies/model_parallel/tensor_parallel_ops.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

void ShardableLinearImpl::shard(const ParallelStyle& style, std::shared_ptr<ProcessGroup> group) {
  if (group_) throw std::logic_error("the layer is split already");
  const int64_t n = group->size();
  const int64_t r = group->rank();
  const bool columns = style.kind == ParallelStyle::Kind::Colwise;
  if (style.kind == ParallelStyle::Kind::Sequence) throw std::invalid_argument("SequenceParallel does not split a Linear");
  if (columns && style.output.sharded && style.output.dim != -1) {
    throw std::invalid_argument("ColwiseParallel's output is Shard(-1) (its features) or Replicate()");
  }
  if (!columns && style.input.sharded && style.input.dim != -1) {
    throw std::invalid_argument("RowwiseParallel's input is Shard(-1) (its features) or Replicate()");
  }
  const int64_t dim = columns ? 0 : 1;  // the weight is [out_features, in_features]
  const int64_t whole = weight.size(dim);
  if (whole % n != 0) {
    throw std::invalid_argument(fmt::format("{} {} cannot be split evenly over tensor_parallel_size {}",
                                            columns ? "out_features" : "in_features", whole, n));
  }
  torch::NoGradGuard no_grad;
  weight.set_data(weight.narrow(dim, r * (whole / n), whole / n).clone());
  if (bias.defined() && columns) bias.set_data(bias.narrow(0, r * (whole / n), whole / n).clone());
  // Added after a reduce-scatter, the bias sees one sequence chunk per rank.
  if (bias.defined() && !columns && style.output.sharded) sum_gradients_over_group(bias, group);
  style_ = style;
  group_ = std::move(group);
}

int64_t ShardableLinearImpl::weight_shard_dim() const {
  if (!group_) return -1;
  return style_.kind == ParallelStyle::Kind::Colwise ? 0 : 1;
}

torch::Tensor ShardableLinearImpl::forward(const torch::Tensor& input) {
  if (!group_) return torch::nn::LinearImpl::forward(input);
  ProcessGroup& g = *group_;
  if (style_.kind == ParallelStyle::Kind::Colwise) {
    const torch::Tensor y = style_.input.sharded ? gathered_linear(input, weight, bias, style_.input.dim, g)
                                                 : torch::nn::functional::linear(copy_to_group(input, g), weight, bias);
    return style_.output.sharded ? y : gather_from_group(y, -1, g);
  }
  const torch::Tensor x = style_.input.sharded ? input : split_to_group(input, -1, g);
  torch::Tensor y = torch::nn::functional::linear(x, weight);
  y = style_.output.sharded ? reduce_scatter_sequence(y, style_.output.dim, g) : reduce_from_group(y, g);
  return bias.defined() ? y + bias : y;
}

}  // namespace fulgur
