#include <fulgur/modules/metrics/r2_score.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

R2Score::R2Score() : Metric("R2Score") {
  const torch::Tensor zero = torch::tensor(0.0, torch::kFloat64);
  for (const char* name : {"sum_squared_obs", "sum_obs", "residual", "total"}) add_state(name, zero, Reduction::Sum);
}

void R2Score::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.sizes() != target.sizes()) {
    throw std::invalid_argument(fmt::format("[R2Score::update] preds [{}] and target [{}] differ in shape",
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  const torch::Tensor p = preds.detach().to(torch::kFloat64).reshape({-1});
  const torch::Tensor t = target.detach().to(p.device(), torch::kFloat64).reshape({-1});
  auto add = [this](const char* name, const torch::Tensor& v) { state(name) = state(name) + v; };
  add("sum_squared_obs", t.square().sum());
  add("sum_obs", t.sum());
  add("residual", (t - p).square().sum());
  add("total", torch::tensor(static_cast<double>(p.numel()), p.options()));
}

torch::Tensor R2Score::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
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
