#include <fulgur/modules/metrics/average_precision.hpp>

#include <fulgur/modules/metrics/binary_curve.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

AveragePrecision::AveragePrecision(std::optional<int64_t> ignore_index) : Metric("AveragePrecision"), ignore_index_(ignore_index) {
  add_state("preds", torch::empty({0}, torch::kFloat64), Reduction::Cat);
  add_state("target", torch::empty({0}, torch::kLong), Reduction::Cat);
}

void AveragePrecision::update(const torch::Tensor& preds, const torch::Tensor& target) {
  if (preds.numel() != target.numel()) {
    throw std::invalid_argument(fmt::format("[AveragePrecision::update] preds [{}] and target [{}] differ in size",
                                            fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  begin_update(preds.device());
  append("preds", binary_scores(preds));
  append("target", target.detach().to(preds.device()).reshape({-1}).to(torch::kLong));
}

torch::Tensor AveragePrecision::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

torch::Tensor AveragePrecision::compute_value() {
  const BinaryCurve curve = binary_curve(cat_state("preds"), cat_state("target"), ignore_index_);
  if (curve.tps.numel() == 0) return torch::zeros({}, torch::kFloat64);
  const torch::Tensor precision = curve.tps / (curve.tps + curve.fps);
  const torch::Tensor recall = safe_divide(curve.tps, curve.tps[-1]);
  const torch::Tensor previous = torch::cat({torch::zeros({1}, recall.options()), recall.slice(0, 0, -1)});
  return ((recall - previous) * precision).sum();
}

torch::Tensor average_precision(const torch::Tensor& preds, const torch::Tensor& target, std::optional<int64_t> ignore_index) {
  AveragePrecision metric(ignore_index);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
