#include <fulgur/modules/metrics/calibration_error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

CalibrationError::CalibrationError(const StatScoresOptions& options, int64_t n_bins, CalibrationNorm norm)
    : Metric("CalibrationError"), options_(options), n_bins_(n_bins), norm_(norm) {
  if (n_bins < 1) {
    throw std::invalid_argument(fmt::format("[CalibrationError::CalibrationError] n_bins must be >= 1, got {}", n_bins));
  }
  if (options.task() == Task::Multilabel) {
    throw std::invalid_argument("[CalibrationError::CalibrationError] task Multilabel is not supported (binary or multiclass)");
  }
  if (options.num_classes() < 2) {
    throw std::invalid_argument(fmt::format(
        "[CalibrationError::CalibrationError] num_classes must be >= 2, got {}", options.num_classes()));
  }
  // n_bins + 1 bins: torchmetrics' bucketize puts a confidence of exactly 1 in a bin of its own.
  const torch::Tensor bins = torch::zeros({n_bins + 1}, torch::kFloat64);
  add_state("count", bins, Reduction::Sum);
  add_state("confidence", bins, Reduction::Sum);
  add_state("hits", bins, Reduction::Sum);
}

void CalibrationError::update(const torch::Tensor& preds, const torch::Tensor& target) {
  begin_update(preds.device());
  const torch::Tensor p = preds.detach();
  torch::Tensor t = target.detach().to(p.device()).reshape({-1});
  if (t.scalar_type() != torch::kLong) t = t.to(torch::kLong);
  if (!p.is_floating_point()) {
    throw std::invalid_argument(fmt::format(
        "[CalibrationError::update] preds must be floating-point probabilities or logits, got {}",
        c10::toString(p.scalar_type())));
  }
  const auto ignore = options_.ignore_index();
  const torch::Tensor valid = ignore ? t != *ignore : torch::ones_like(t, torch::kBool);
  const int64_t c = options_.num_classes();
  const bool binary = options_.task() == Task::Binary;
  if (options_.validate_args() && t.device().is_cpu()) {
    const torch::Tensor bad = valid & ((t < 0) | (t >= (binary ? 2 : c)));
    if (bad.any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[CalibrationError::update] target value {} is outside [0, {}){}",
                                              t.masked_select(bad)[0].item<int64_t>(), binary ? 2 : c,
                                              ignore ? " and not ignore_index" : ""));
    }
  }
  torch::Tensor confidence, hit;
  if (binary) {
    if (p.numel() != t.numel()) {
      throw std::invalid_argument(fmt::format("[CalibrationError::update] binary preds [{}] and target [{}] differ in size",
                                              fmt::join(p.sizes(), ", "), fmt::join(target.sizes(), ", ")));
    }
    const torch::Tensor flat = p.reshape({-1});
    // Logits when any kept value is outside [0, 1], decided on the device
    // over the samples torchmetrics keeps (it drops ignored ones first).
    confidence = torch::where((((flat < 0) | (flat > 1)) & valid).any(), flat.sigmoid(), flat);
    hit = t.clamp(0, 1);
  } else {
    if (p.dim() != target.dim() + 1 || p.dim() < 2 || p.size(1) != c) {
      throw std::invalid_argument(fmt::format("[CalibrationError::update] expected preds [N, {}, ...] for target [{}], got [{}]",
                                              c, fmt::join(target.sizes(), ", "), fmt::join(p.sizes(), ", ")));
    }
    const torch::Tensor scores = p.dim() == 2 ? p : p.movedim(1, -1).reshape({-1, c});
    const torch::Tensor outside = (((scores < 0) | (scores > 1)) & valid.unsqueeze(1)).any();
    const auto [top, label] = torch::where(outside, scores.softmax(1), scores).max(1);
    confidence = top.to(torch::kFloat32);  // torchmetrics bins float32 confidences
    hit = label == t;
  }
  // The bin edges in the confidences' dtype, made by the same linspace as
  // torchmetrics', so a confidence on an edge falls on the same side.
  const torch::Tensor edges = torch::linspace(0, 1, n_bins_ + 1, confidence.options());
  const torch::Tensor bin = (torch::bucketize(confidence, edges, /*out_int32=*/false, /*right=*/true) - 1).clamp(0, n_bins_);
  const torch::Tensor weight = valid.to(torch::kFloat64);
  state("count").index_add_(0, bin, weight);
  state("confidence").index_add_(0, bin, confidence.to(torch::kFloat64) * weight);
  state("hits").index_add_(0, bin, hit.to(torch::kFloat64) * weight);
}

torch::Tensor CalibrationError::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

torch::Tensor CalibrationError::compute_value() {
  const torch::Tensor count = state("count");
  const torch::Tensor gap = (safe_divide(state("hits"), count) - safe_divide(state("confidence"), count)).abs();
  const torch::Tensor share = safe_divide(count, count.sum());
  switch (norm_) {
    case CalibrationNorm::L1: return (gap * share).sum();
    case CalibrationNorm::L2: return (gap * gap * share).sum().sqrt();
    case CalibrationNorm::Max: break;
  }
  return gap.max();
}

torch::Tensor calibration_error(const torch::Tensor& preds, const torch::Tensor& target,
                                const StatScoresOptions& options, int64_t n_bins, CalibrationNorm norm) {
  CalibrationError metric(options, n_bins, norm);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
