#include <fulgur/modules/metrics/min_metric.hpp>

#include <limits>

namespace fulgur::metrics {

MinMetric::MinMetric() : Metric("MinMetric") { add_state("min_value", torch::tensor(std::numeric_limits<double>::infinity(), torch::kFloat64), Reduction::Min); }

void MinMetric::update(const torch::Tensor& value) {
  begin_update(value.device());
  torch::Tensor& s = state("min_value");
  if (value.numel() > 0) s = torch::minimum(s, value.detach().to(torch::kFloat64).min());
}

torch::Tensor MinMetric::forward(const torch::Tensor& value) {
  return forward_with([&] { update(value); });
}

torch::Tensor MinMetric::compute_value() { return state("min_value").clone(); }

}  // namespace fulgur::metrics
