#include <fulgur/modules/metrics/mean_absolute_error.hpp>

namespace fulgur::metrics {

MeanAbsoluteError::MeanAbsoluteError() : RegressionMetric("MeanAbsoluteError", {"sum_abs_error", "total"}) {}

void MeanAbsoluteError::accumulate(const torch::Tensor& preds, const torch::Tensor& target) {
  add("sum_abs_error", (preds - target).abs().sum());
  add("total", count(preds));
}

torch::Tensor MeanAbsoluteError::compute_value() {
  return state("sum_abs_error") / state("total");
}

torch::Tensor mean_absolute_error(const torch::Tensor& preds, const torch::Tensor& target) {
  MeanAbsoluteError metric;
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
