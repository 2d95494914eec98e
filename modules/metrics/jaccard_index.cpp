#include <fulgur/modules/metrics/jaccard_index.hpp>

namespace fulgur::metrics {

JaccardIndex::JaccardIndex(const StatScoresOptions& options) : StatScores("JaccardIndex", options) {}

torch::Tensor JaccardIndex::compute_value() {
  const Counts c = counts();
  const torch::Tensor den = c.tp + c.fp + c.fn;
  if (options_.task() == Task::Binary) return safe_divide(c.tp, den);
  const int64_t classes = options_.num_classes();
  const auto ignore = options_.ignore_index();
  // torchmetrics tests the range for multilabel too (ignore_index then names a label).
  const bool ignore_in = ignore && *ignore >= 0 && *ignore < classes;
  switch (options_.average()) {
    case Average::Micro: return safe_divide(c.tp.sum(), den.sum() - (ignore_in ? den[*ignore] : torch::zeros_like(den[0])));
    case Average::None: return safe_divide(c.tp, den);
    case Average::Weighted: return weighted_mean(safe_divide(c.tp, den), c.tp + c.fn);
    case Average::Macro: break;
  }
  torch::Tensor weights = options_.task() == Task::Multilabel ? torch::ones_like(den) : (den != 0).to(torch::kFloat64);
  if (ignore_in) weights[*ignore] = 0.0;
  return weighted_mean(safe_divide(c.tp, den), weights);
}

torch::Tensor jaccard_index(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  JaccardIndex metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
