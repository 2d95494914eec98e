#include <fulgur/modules/metrics/mean_squared_error.hpp>

namespace fulgur::metrics {

MeanSquaredError::MeanSquaredError() : RegressionMetric("MeanSquaredError", {"sum_squared_error", "total"}) {}

void MeanSquaredError::accumulate(const torch::Tensor& preds, const torch::Tensor& target) {
  add("sum_squared_error", (preds - target).square().sum());
  add("total", count(preds));
}

torch::Tensor MeanSquaredError::compute_value() {
  return state("sum_squared_error") / state("total");
}

torch::Tensor mean_squared_error(const torch::Tensor& preds, const torch::Tensor& target) {
  MeanSquaredError metric;
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
