#include <fulgur/modules/metrics/auroc.hpp>

namespace fulgur::metrics {

torch::Tensor AUROC::curve_score(const BinaryCurve& curve, bool) const {
  if (curve.tps.numel() == 0) return torch::zeros({}, torch::kFloat64);
  const torch::Tensor zero = torch::zeros({1}, curve.tps.options());
  // No positives (negatives): a rate of 0 throughout, as torchmetrics sets it.
  const torch::Tensor tpr = torch::cat({zero, safe_divide(curve.tps, curve.tps[-1])});
  const torch::Tensor fpr = torch::cat({zero, safe_divide(curve.fps, curve.fps[-1])});
  // The trapezoid rule over the ROC points.
  return ((fpr.slice(0, 1) - fpr.slice(0, 0, -1)) * (tpr.slice(0, 1) + tpr.slice(0, 0, -1)) / 2).sum();
}

torch::Tensor auroc(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options) {
  AUROC metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
