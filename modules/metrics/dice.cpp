#include <fulgur/modules/metrics/dice.hpp>

#include <stdexcept>

namespace fulgur::metrics {

Dice::Dice(const StatScoresOptions& options) : StatScores("Dice", options) {
  // torchmetrics' DiceScore has no multilabel task to be held to.
  if (options.task() == Task::Multilabel) throw std::invalid_argument("[Dice::Dice] task Multilabel is not supported");
}

torch::Tensor Dice::compute_value() {
  return reduce([](const Counts& c) { return 2 * safe_divide(c.tp, 2 * c.tp + c.fp + c.fn); });
}

torch::Tensor dice(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Dice metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
