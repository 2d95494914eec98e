#include <fulgur/modules/metrics/dice.hpp>

namespace fulgur::metrics {

Dice::Dice(const StatScoresOptions& options) : StatScores("Dice", options) {}

torch::Tensor Dice::compute_value() {
  const auto dice = [](const Counts& c) { return 2 * safe_divide(c.tp, 2 * c.tp + c.fp + c.fn); };
  if (options_.task() == Task::Multilabel && options_.average() == Average::Macro) {
    // DiceScore leaves out labels nobody predicted or labelled (its nan), multilabel too.
    const Counts c = counts();
    return weighted_mean(dice(c), ((c.tp + c.fp + c.fn) != 0).to(torch::kFloat64));
  }
  return reduce(dice);
}

torch::Tensor dice(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  Dice metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
