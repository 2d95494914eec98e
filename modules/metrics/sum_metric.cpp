#include <fulgur/modules/metrics/sum_metric.hpp>

#include <limits>

namespace fulgur::metrics {

SumMetric::SumMetric() : Metric("SumMetric") { add_state("sum_value", torch::tensor(0.0, torch::kFloat64), Reduction::Sum); }

void SumMetric::update(const torch::Tensor& value) {
  begin_update(value.device());
  torch::Tensor& s = state("sum_value");
  s = s + value.detach().to(torch::kFloat64).sum();
}

torch::Tensor SumMetric::forward(const torch::Tensor& value) {
  return forward_with([&] { update(value); });
}

torch::Tensor SumMetric::compute_value() { return state("sum_value").clone(); }

}  // namespace fulgur::metrics
