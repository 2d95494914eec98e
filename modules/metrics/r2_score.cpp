#include <fulgur/modules/metrics/r2_score.hpp>

namespace fulgur::metrics {

R2Score::R2Score() : RegressionMetric("R2Score", {"sum_squared_obs", "sum_obs", "residual", "total"}) {}

void R2Score::accumulate(const torch::Tensor& preds, const torch::Tensor& target) {
  add("sum_squared_obs", target.square().sum());
  add("sum_obs", target.sum());
  add("residual", (target - preds).square().sum());
  add("total", count(preds));
}

torch::Tensor R2Score::compute_value() {
  const torch::Tensor tss = state("sum_squared_obs") - state("sum_obs") * state("sum_obs") / state("total");
  return 1 - state("residual") / tss;
}

torch::Tensor r2_score(const torch::Tensor& preds, const torch::Tensor& target) {
  R2Score metric;
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
