#include <fulgur/strategies/model_parallel/halo_exchange.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <stdexcept>
#include <utility>
#include <variant>

namespace fulgur {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Tags of the two directions, so a rank's two messages to one neighbour
// (in a group of two, both neighbours are the same rank) never cross.
constexpr int kTowardsPrevious = 1;
constexpr int kTowardsNext = 2;

/// Sends `to_previous` to rank r - 1 and `to_next` to rank r + 1; returns
/// what they sent this way (zeros at the ends of the row of ranks).
std::pair<torch::Tensor, torch::Tensor> exchange(const torch::Tensor& to_previous, const torch::Tensor& to_next,
                                                 ProcessGroup& group) {
  const int64_t rank = group.rank(), last = group.size() - 1;
  torch::Tensor down = to_previous.contiguous(), up = to_next.contiguous();
  torch::Tensor from_previous = torch::zeros_like(up), from_next = torch::zeros_like(down);
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  // Receives first, then sends: every transfer is posted before any wait.
  if (rank > 0) works.push_back(group.recv_async(from_previous, rank - 1, kTowardsNext));
  if (rank < last) works.push_back(group.recv_async(from_next, rank + 1, kTowardsPrevious));
  if (rank > 0) works.push_back(group.send_async(down, rank - 1, kTowardsPrevious));
  if (rank < last) works.push_back(group.send_async(up, rank + 1, kTowardsNext));
  for (const auto& work : works) group.wait(work, "halo exchange");
  return {from_previous, from_next};
}

struct HaloExchange : torch::autograd::Function<HaloExchange> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, int64_t dim, int64_t halo,
                               ProcessGroup* group) {
    ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["halo"] = halo;
    const int64_t rows = input.size(dim);
    auto [before, after] = exchange(input.narrow(dim, 0, halo), input.narrow(dim, rows - halo, halo), *group);
    return torch::cat({before, input, after}, dim);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto& group = *reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
    const int64_t dim = ctx->saved_data["dim"].toInt(), halo = ctx->saved_data["halo"].toInt();
    const torch::Tensor& grad = grads[0];
    const int64_t rows = grad.size(dim) - 2 * halo;
    // My halos' gradients belong to my neighbours' edge rows, theirs to mine.
    auto [from_previous, from_next] =
        exchange(grad.narrow(dim, 0, halo), grad.narrow(dim, halo + rows, halo), group);
    torch::Tensor own = grad.narrow(dim, halo, rows).clone();
    own.narrow(dim, 0, halo).add_(from_previous);
    own.narrow(dim, rows - halo, halo).add_(from_next);
    return {own, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor halo_exchange(const torch::Tensor& input, int64_t dim, int64_t halo, ProcessGroup& group) {
  if (dim < 0) dim += input.dim();
  if (dim < 0 || dim >= input.dim()) {
    throw std::invalid_argument(fmt::format("[halo_exchange] dimension {} is outside a tensor of {} dimensions", dim,
                                            input.dim()));
  }
  if (halo < 0 || halo > input.size(dim)) {
    throw std::invalid_argument(fmt::format(
        "[halo_exchange] a halo of {} rows does not fit the {} rows this rank holds along dimension {} "
        "(use fewer ranks along cp, larger inputs or a smaller kernel)",
        halo, input.size(dim), dim));
  }
  if (halo == 0) return input;
  return HaloExchange::apply(input, dim, halo, &group);
}

torch::Tensor halo_conv2d(const torch::Tensor& input, torch::nn::Conv2dImpl& conv, ProcessGroup* group) {
  if (group == nullptr || group->size() == 1) return conv.forward(input);
  const auto& o = conv.options;
  const int64_t kernel = (*o.kernel_size())[0], stride = (*o.stride())[0], dilation = (*o.dilation())[0];
  const auto* padding = std::get_if<torch::ExpandingArray<2>>(&o.padding());
  const int64_t same = dilation * (kernel - 1) / 2;
  if (input.dim() != 4) {
    throw std::invalid_argument(fmt::format("[halo_conv2d] expects [batch, channels, height, width], got {} dimensions",
                                            input.dim()));
  }
  if (stride != 1 || padding == nullptr || (**padding)[0] != same || 2 * same != dilation * (kernel - 1) ||
      !std::holds_alternative<torch::enumtype::kZeros>(o.padding_mode())) {
    throw std::invalid_argument(fmt::format(
        "[halo_conv2d] a convolution split by rows must keep the height: stride 1 and zero padding {} along it "
        "(kernel {}, dilation {}); got stride {} and padding {}",
        same, kernel, dilation, stride, padding != nullptr ? std::to_string((**padding)[0]) : "'valid'/'same'"));
  }
  const torch::Tensor rows = halo_exchange(input, 2, same, *group);
  return torch::conv2d(rows, conv.weight, o.bias() ? conv.bias : torch::Tensor(), o.stride(),
                       torch::IntArrayRef{0, (**padding)[1]}, o.dilation(), o.groups());
}

}  // namespace fulgur
