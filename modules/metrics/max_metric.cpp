#include <fulgur/modules/metrics/max_metric.hpp>

#include <limits>

namespace fulgur::metrics {

MaxMetric::MaxMetric() : Metric("MaxMetric") { add_state("max_value", torch::tensor(-std::numeric_limits<double>::infinity(), torch::kFloat64), Reduction::Max); }

void MaxMetric::update(const torch::Tensor& value) {
  begin_update(value.device());
  torch::Tensor& s = state("max_value");
  if (value.numel() > 0) s = torch::maximum(s, value.detach().to(torch::kFloat64).max());
}

torch::Tensor MaxMetric::forward(const torch::Tensor& value) {
  return forward_with([&] { update(value); });
}

torch::Tensor MaxMetric::compute_value() { return state("max_value").clone(); }

}  // namespace fulgur::metrics
