#include <fulgur/modules/metrics/precision.hpp>

namespace fulgur::metrics {

Precision::Precision(const StatScoresOptions& options) : StatScores("Precision", options) {}

torch::Tensor Precision::compute_value() {
  return reduce([](const Counts& c) { return safe_divide(c.tp, c.tp + c.fp); });
}

torch::Tensor precision(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Precision metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
