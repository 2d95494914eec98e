#include <fulgur/modules/metrics/mean_metric.hpp>

namespace fulgur::metrics {

MeanMetric::MeanMetric() : Metric("MeanMetric") {
  add_state("mean_value", torch::tensor(0.0, torch::kFloat64), Reduction::Sum);
  add_state("weight", torch::tensor(0.0, torch::kFloat64), Reduction::Sum);
}

void MeanMetric::update(const torch::Tensor& value, const torch::Tensor& weight) {
  begin_update(value.device());
  const torch::Tensor v = value.detach().to(torch::kFloat64);
  const torch::Tensor w = weight.defined() ? weight.detach().to(v.device(), torch::kFloat64).expand_as(v)
                                           : torch::ones_like(v);
  state("mean_value") = state("mean_value") + (v * w).sum();
  state("weight") = state("weight") + w.sum();
}

torch::Tensor MeanMetric::forward(const torch::Tensor& value, const torch::Tensor& weight) {
  return forward_with([&] { update(value, weight); });
}

torch::Tensor MeanMetric::compute_value() { return state("mean_value") / state("weight"); }

}  // namespace fulgur::metrics
