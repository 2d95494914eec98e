#include <fulgur/modules/metrics/recall.hpp>

namespace fulgur::metrics {

Recall::Recall(const StatScoresOptions& options) : StatScores("Recall", options) {}

torch::Tensor Recall::compute_value() {
  return reduce([](const Counts& c) { return safe_divide(c.tp, c.tp + c.fn); });
}

torch::Tensor recall(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Recall metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
