#include <fulgur/modules/metrics/average_precision.hpp>

#include <limits>

namespace fulgur::metrics {

torch::Tensor AveragePrecision::curve_score(const BinaryCurve& curve, bool one_vs_rest) const {
  if (curve.tps.numel() == 0) return torch::zeros({}, torch::kFloat64);
  const torch::Tensor precision = curve.tps / (curve.tps + curve.fps);
  torch::Tensor recall = safe_divide(curve.tps, curve.tps[-1]);
  if (one_vs_rest) {
    // torchmetrics divides by zero positives there: nan, left out of the average.
    recall = torch::where(curve.tps[-1] == 0, torch::full_like(recall, std::numeric_limits<double>::quiet_NaN()), recall);
  }
  const torch::Tensor previous = torch::cat({torch::zeros({1}, recall.options()), recall.slice(0, 0, -1)});
  return ((recall - previous) * precision).sum();
}

torch::Tensor average_precision(const torch::Tensor& preds, const torch::Tensor& target,
                                const StatScoresOptions& options) {
  AveragePrecision metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
