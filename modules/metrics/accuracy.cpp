#include <fulgur/modules/metrics/accuracy.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

torch::Tensor accuracy(const torch::Tensor& logits, const torch::Tensor& target, int64_t top_k) {
  if (logits.dim() != 2 || target.dim() != 1 || logits.size(0) != target.size(0)) {
    throw std::invalid_argument(fmt::format("[accuracy] expected logits [N, C] and target [N], got [{}] and [{}]",
                                            fmt::join(logits.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  if (top_k < 1 || top_k > logits.size(1)) {
    throw std::invalid_argument(fmt::format("[accuracy] top_k must be in [1, {}], got {}", logits.size(1), top_k));
  }
  if (logits.size(0) == 0) return torch::zeros({}, logits.options().dtype(torch::kFloat32));
  const torch::Tensor top = std::get<1>(logits.topk(top_k, /*dim=*/1));
  return top.eq(target.unsqueeze(1)).any(1).to(torch::kFloat32).mean();
}

}  // namespace fulgur::metrics

namespace fulgur::metrics {

torch::Tensor Accuracy::compute_value() {
  if (options_.task() == Task::Binary) {
    const Counts c = counts();
    return safe_divide(c.tp + c.tn, c.tp + c.tn + c.fp + c.fn);
  }
  // Multilabel: right decisions, positive or negative, over all decisions.
  if (options_.task() == Task::Multilabel) {
    return reduce([](const Counts& c) { return safe_divide(c.tp + c.tn, c.tp + c.tn + c.fp + c.fn); });
  }
  return reduce([](const Counts& c) { return safe_divide(c.tp, c.tp + c.fn); });
}

torch::Tensor accuracy(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Accuracy metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
