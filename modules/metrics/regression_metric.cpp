#include <fulgur/modules/metrics/regression_metric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

RegressionMetric::RegressionMetric(const std::string& name, std::initializer_list<const char*> sums)
    : Metric(name), name_(name) {
  const torch::Tensor zero = torch::tensor(0.0, torch::kFloat64);
  for (const char* sum : sums) add_state(sum, zero, Reduction::Sum);
}

void RegressionMetric::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.sizes() != target.sizes()) {
    throw std::invalid_argument(fmt::format("[{}::update] preds [{}] and target [{}] differ in shape", name_,
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  const torch::Tensor p = preds.detach().to(torch::kFloat64).reshape({-1});
  accumulate(p, target.detach().to(p.device(), torch::kFloat64).reshape({-1}));
}

torch::Tensor RegressionMetric::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

void RegressionMetric::add(const char* name, const torch::Tensor& value) { state(name) = state(name) + value; }

torch::Tensor RegressionMetric::count(const torch::Tensor& preds) {
  return torch::tensor(static_cast<double>(preds.numel()), preds.options());
}

}  // namespace fulgur::metrics
