#include <fulgur/strategies/model_parallel/tensor_parallel_ops.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The group travels in the autograd context as an integer: the Function
// outlives no group, since groups live as long as the modules that use them.
void save_group(AutogradContext* ctx, ProcessGroup& group, int64_t dim = 0) {
  ctx->saved_data["group"] = reinterpret_cast<int64_t>(&group);
  ctx->saved_data["dim"] = dim;
}
ProcessGroup& group_of(AutogradContext* ctx) { return *reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt()); }
int64_t dim_of(AutogradContext* ctx) { return ctx->saved_data["dim"].toInt(); }

torch::Tensor summed(const torch::Tensor& t, ProcessGroup& group) {
  torch::Tensor out = t.contiguous().clone();
  group.all_reduce(out, ReduceOp::Sum);
  return out;
}

torch::Tensor gathered(const torch::Tensor& t, int64_t dim, ProcessGroup& group) {
  return torch::cat(group.all_gather(t.contiguous()), dim);
}

torch::Tensor chunk_of(const torch::Tensor& t, int64_t dim, ProcessGroup& group) {
  const int64_t n = group.size();
  if (t.size(dim) % n != 0) {
    throw std::invalid_argument(fmt::format("[tensor parallel] dimension {} of size {} cannot be split over {} ranks", dim,
                                            t.size(dim), n));
  }
  return t.narrow(dim, group.rank() * (t.size(dim) / n), t.size(dim) / n).contiguous();
}

torch::Tensor reduce_scattered(const torch::Tensor& t, int64_t dim, ProcessGroup& group) {
  const int64_t n = group.size();
  if (t.size(dim) % n != 0) {
    throw std::invalid_argument(fmt::format("[tensor parallel] dimension {} of size {} cannot be reduce-scattered over {} ranks",
                                            dim, t.size(dim), n));
  }
  torch::Tensor input = t.movedim(dim, 0).contiguous();
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] /= n;
  torch::Tensor output = torch::empty(shape, input.options());
  group.wait(group.reduce_scatter_async(output, input), "reduce_scatter");
  return output.movedim(0, dim).contiguous();
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, ProcessGroup* group) {
    save_group(ctx, *group);
    return input;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(grads[0], group_of(ctx)), torch::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static torch::Tensor forward(AutogradContext*, const torch::Tensor& input, ProcessGroup* group) {
    return summed(input, *group);
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], torch::Tensor()}; }
};

struct SplitToGroup : torch::autograd::Function<SplitToGroup> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, int64_t dim, ProcessGroup* group) {
    save_group(ctx, *group, dim);
    return chunk_of(input, dim, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gathered(grads[0], dim_of(ctx), group_of(ctx)), torch::Tensor(), torch::Tensor()};
  }
};

struct GatherFromGroup : torch::autograd::Function<GatherFromGroup> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, int64_t dim, ProcessGroup* group) {
    save_group(ctx, *group, dim);
    return gathered(input, dim, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {chunk_of(grads[0], dim_of(ctx), group_of(ctx)), torch::Tensor(), torch::Tensor()};
  }
};

struct GatherSequence : torch::autograd::Function<GatherSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, int64_t dim, ProcessGroup* group) {
    save_group(ctx, *group, dim);
    return gathered(input, dim, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {reduce_scattered(grads[0], dim_of(ctx), group_of(ctx)), torch::Tensor(), torch::Tensor()};
  }
};

struct ReduceScatterSequence : torch::autograd::Function<ReduceScatterSequence> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, int64_t dim, ProcessGroup* group) {
    save_group(ctx, *group, dim);
    return reduce_scattered(input, dim, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gathered(grads[0], dim_of(ctx), group_of(ctx)), torch::Tensor(), torch::Tensor()};
  }
};

struct GatheredLinear : torch::autograd::Function<GatheredLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                               const std::optional<torch::Tensor>& bias, int64_t dim, ProcessGroup* group) {
    save_group(ctx, *group, dim);
    ctx->save_for_backward({input, weight});
    ctx->saved_data["bias"] = bias.has_value();
    return torch::nn::functional::linear(gathered(input, dim, *group), weight, bias.value_or(torch::Tensor()));
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    ProcessGroup& group = group_of(ctx);
    const int64_t dim = dim_of(ctx);
    const torch::Tensor whole = gathered(saved[0], dim, group);  // again, instead of kept
    const torch::Tensor& grad = grads[0];
    const torch::Tensor grad_rows = grad.reshape({-1, grad.size(-1)});
    const torch::Tensor grad_weight = grad_rows.t().matmul(whole.reshape({-1, whole.size(-1)}));
    const torch::Tensor grad_bias = ctx->saved_data["bias"].toBool() ? grad_rows.sum(0) : torch::Tensor();
    const torch::Tensor grad_input = reduce_scattered(grad.matmul(saved[1]), dim, group);
    return {grad_input, grad_weight, grad_bias, torch::Tensor(), torch::Tensor()};
  }
};

// Per-token loss of vocabulary-split logits [tokens, V/n]; targets [tokens].
struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& target,
                               ProcessGroup* group) {
    const int64_t local = logits.size(-1);
    const int64_t start = group->rank() * local;
    torch::Tensor x = logits.to(torch::kFloat);
    torch::Tensor max = x.amax(-1);
    group->all_reduce(max, ReduceOp::Max);
    x = x - max.unsqueeze(-1);
    torch::Tensor exp = x.exp();
    torch::Tensor sum = summed(exp.sum(-1), *group);
    const torch::Tensor mine = (target >= start) & (target < start + local);
    const torch::Tensor index = (target - start).clamp(0, local - 1);
    torch::Tensor picked = x.gather(-1, index.unsqueeze(-1)).squeeze(-1) * mine;
    picked = summed(picked, *group);
    exp.div_(sum.unsqueeze(-1));  // the softmax, kept for backward
    ctx->save_for_backward({exp, mine, index});
    ctx->saved_data["dtype"] = static_cast<int64_t>(logits.scalar_type());
    return sum.log() - picked;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    torch::Tensor grad = saved[0].clone();  // softmax - onehot(target), on this rank's classes
    grad.scatter_add_(-1, saved[2].unsqueeze(-1), -saved[1].to(grad.scalar_type()).unsqueeze(-1));
    grad.mul_(grads[0].unsqueeze(-1));
    return {grad.to(static_cast<c10::ScalarType>(ctx->saved_data["dtype"].toInt())), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor copy_to_group(const torch::Tensor& input, ProcessGroup& group) { return CopyToGroup::apply(input, &group); }

torch::Tensor reduce_from_group(const torch::Tensor& input, ProcessGroup& group) {
  return ReduceFromGroup::apply(input, &group);
}

torch::Tensor split_to_group(const torch::Tensor& input, int64_t dim, ProcessGroup& group) {
  return SplitToGroup::apply(input, dim < 0 ? dim + input.dim() : dim, &group);
}

torch::Tensor gather_from_group(const torch::Tensor& input, int64_t dim, ProcessGroup& group) {
  return GatherFromGroup::apply(input, dim < 0 ? dim + input.dim() : dim, &group);
}

torch::Tensor gather_sequence(const torch::Tensor& input, int64_t dim, ProcessGroup& group) {
  return GatherSequence::apply(input, dim < 0 ? dim + input.dim() : dim, &group);
}

torch::Tensor reduce_scatter_sequence(const torch::Tensor& input, int64_t dim, ProcessGroup& group) {
  return ReduceScatterSequence::apply(input, dim < 0 ? dim + input.dim() : dim, &group);
}

torch::Tensor gathered_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias,
                              int64_t dim, ProcessGroup& group) {
  const std::optional<torch::Tensor> maybe_bias = bias.defined() ? std::optional<torch::Tensor>(bias) : std::nullopt;
  return GatheredLinear::apply(input, weight, maybe_bias, dim < 0 ? dim + input.dim() : dim, &group);
}

void sum_gradients_over_group(torch::Tensor& param, std::shared_ptr<ProcessGroup> group) {
  param.register_hook([group](const torch::Tensor& grad) { return summed(grad, *group); });
}

torch::Tensor vocab_parallel_cross_entropy(const torch::Tensor& logits, const torch::Tensor& target, ProcessGroup& group,
                                           int64_t ignore_index) {
  const torch::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
  const torch::Tensor flat_target = target.reshape({-1});
  if (flat_logits.size(0) != flat_target.size(0)) {
    throw std::invalid_argument(fmt::format("[vocab_parallel_cross_entropy] {} rows of logits but {} targets",
                                            flat_logits.size(0), flat_target.size(0)));
  }
  const torch::Tensor counted = flat_target != ignore_index;
  const torch::Tensor per_token = VocabParallelCrossEntropy::apply(flat_logits, flat_target.masked_fill(~counted, 0), &group);
  return (per_token * counted).sum() / counted.sum().clamp_min(1);
}

}  // namespace fulgur
