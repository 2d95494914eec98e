#include <fulgur/modules/metrics/pearson_corr_coef.hpp>

namespace fulgur::metrics {

PearsonCorrCoef::PearsonCorrCoef() : RegressionMetric("PearsonCorrCoef", {"sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy", "total"}) {}

void PearsonCorrCoef::accumulate(const torch::Tensor& preds, const torch::Tensor& target) {
  add("sum_x", preds.sum());
  add("sum_y", target.sum());
  add("sum_xx", preds.square().sum());
  add("sum_yy", target.square().sum());
  add("sum_xy", (preds * target).sum());
  add("total", count(preds));
}

torch::Tensor PearsonCorrCoef::compute_value() {
  // Centred sums from raw ones: fine in float64 for data of moderate scale.
  const torch::Tensor n = state("total");
  const torch::Tensor sxy = state("sum_xy") - state("sum_x") * state("sum_y") / n;
  const torch::Tensor sxx = state("sum_xx") - state("sum_x") * state("sum_x") / n;
  const torch::Tensor syy = state("sum_yy") - state("sum_y") * state("sum_y") / n;
  return sxy / (sxx * syy).sqrt();
}

torch::Tensor pearson_corrcoef(const torch::Tensor& preds, const torch::Tensor& target) {
  PearsonCorrCoef metric;
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
