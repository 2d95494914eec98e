#include <fulgur/modules/metrics/dice.hpp>

namespace fulgur::metrics {

Dice::Dice(const StatScoresOptions& options) : StatScores("Dice", options) {}

torch::Tensor Dice::compute_value() {
  return reduce([](const Counts& c) { return 2 * safe_divide(c.tp, 2 * c.tp + c.fp + c.fn); });
}

torch::Tensor dice(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Dice metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
