#include <fulgur/modules/metrics/pearson_corr_coef.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

PearsonCorrCoef::PearsonCorrCoef() : Metric("PearsonCorrCoef") {
  const torch::Tensor zero = torch::tensor(0.0, torch::kFloat64);
  for (const char* name : {"sum_x", "sum_y", "sum_xx", "sum_yy", "sum_xy", "total"}) add_state(name, zero, Reduction::Sum);
}

void PearsonCorrCoef::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.sizes() != target.sizes()) {
    throw std::invalid_argument(fmt::format("[PearsonCorrCoef::update] preds [{}] and target [{}] differ in shape",
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  const torch::Tensor p = preds.detach().to(torch::kFloat64).reshape({-1});
  const torch::Tensor t = target.detach().to(p.device(), torch::kFloat64).reshape({-1});
  auto add = [this](const char* name, const torch::Tensor& v) { state(name) = state(name) + v; };
  add("sum_x", p.sum());
  add("sum_y", t.sum());
  add("sum_xx", p.square().sum());
  add("sum_yy", t.square().sum());
  add("sum_xy", (p * t).sum());
  add("total", torch::tensor(static_cast<double>(p.numel()), p.options()));
}

torch::Tensor PearsonCorrCoef::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
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
