#include <fulgur/modules/metrics/mean_squared_error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

MeanSquaredError::MeanSquaredError() : Metric("MeanSquaredError") {
  const torch::Tensor zero = torch::tensor(0.0, torch::kFloat64);
  for (const char* name : {"sum_squared_error", "total"}) add_state(name, zero, Reduction::Sum);
}

void MeanSquaredError::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.sizes() != target.sizes()) {
    throw std::invalid_argument(fmt::format("[MeanSquaredError::update] preds [{}] and target [{}] differ in shape",
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  const torch::Tensor p = preds.detach().to(torch::kFloat64).reshape({-1});
  const torch::Tensor t = target.detach().to(p.device(), torch::kFloat64).reshape({-1});
  auto add = [this](const char* name, const torch::Tensor& v) { state(name) = state(name) + v; };
  add("sum_squared_error", (p - t).square().sum());
  add("total", torch::tensor(static_cast<double>(p.numel()), p.options()));
}

torch::Tensor MeanSquaredError::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
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
