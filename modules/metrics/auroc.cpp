#include <fulgur/modules/metrics/auroc.hpp>

#include <fulgur/modules/metrics/binary_curve.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

AUROC::AUROC(std::optional<int64_t> ignore_index) : Metric("AUROC"), ignore_index_(ignore_index) {
  add_state("preds", torch::empty({0}, torch::kFloat64), Reduction::Cat);
  add_state("target", torch::empty({0}, torch::kLong), Reduction::Cat);
}

void AUROC::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.numel() != target.numel()) {
    throw std::invalid_argument(fmt::format("[AUROC::update] preds [{}] and target [{}] differ in size",
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  append("preds", binary_scores(preds));
  append("target", target.detach().to(preds.device()).reshape({-1}).to(torch::kLong));
}

torch::Tensor AUROC::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

torch::Tensor AUROC::compute_value() {
  const BinaryCurve curve = binary_curve(cat_state("preds"), cat_state("target"), ignore_index_);
  if (curve.tps.numel() == 0) return torch::zeros({}, torch::kFloat64);
  const torch::Tensor zero = torch::zeros({1}, curve.tps.options());
  const torch::Tensor tpr = torch::cat({zero, safe_divide(curve.tps, curve.tps[-1])});
  const torch::Tensor fpr = torch::cat({zero, safe_divide(curve.fps, curve.fps[-1])});
  // The trapezoid rule over the ROC points.
  return ((fpr.slice(0, 1) - fpr.slice(0, 0, -1)) * (tpr.slice(0, 1) + tpr.slice(0, 0, -1)) / 2).sum();
}

torch::Tensor auroc(const torch::Tensor& preds, const torch::Tensor& target, std::optional<int64_t> ignore_index) {
  AUROC metric(ignore_index);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
