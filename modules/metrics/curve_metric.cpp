#include <fulgur/modules/metrics/curve_metric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <vector>

namespace fulgur::metrics {

CurveMetric::CurveMetric(const std::string& name, const StatScoresOptions& options)
    : Metric(name), options_(options) {
  const Task task = options.task();
  const int64_t c = options.num_classes();
  if (task != Task::Binary && c < 2) {
    throw std::invalid_argument(fmt::format("[{}::{}] {} must be >= 2, got {}", name, name,
                                            task == Task::Multilabel ? "num_labels" : "num_classes", c));
  }
  if (options.top_k() != 1) {
    throw std::invalid_argument(fmt::format("[{}::{}] top_k must be 1, got {}", name, name, options.top_k()));
  }
  if (task == Task::Multiclass && options.average() == Average::Micro) {
    throw std::invalid_argument(fmt::format(
        "[{}::{}] average Micro is not defined for a multiclass task (Macro, Weighted or None)", name, name));
  }
  switch (task) {
    case Task::Binary:
      add_state("preds", torch::empty({0}, torch::kFloat64), Reduction::Cat);
      add_state("target", torch::empty({0}, torch::kLong), Reduction::Cat);
      break;
    case Task::Multiclass:
      add_state("preds", torch::empty({0, c}, torch::kFloat64), Reduction::Cat);
      add_state("target", torch::empty({0}, torch::kLong), Reduction::Cat);
      break;
    case Task::Multilabel:
      add_state("preds", torch::empty({0, c}, torch::kFloat64), Reduction::Cat);
      add_state("target", torch::empty({0, c}, torch::kLong), Reduction::Cat);
      break;
  }
}

void CurveMetric::update(const torch::Tensor& preds, const torch::Tensor& target) {
  const Task task = options_.task();
  const int64_t c = options_.num_classes();
  const auto ignore = options_.ignore_index();
  torch::Tensor p = preds.detach().to(torch::kFloat64);
  torch::Tensor t = target.detach().to(preds.device(), torch::kLong);
  const bool shapes_fit = task == Task::Binary ? p.numel() == t.numel()
                          : task == Task::Multiclass
                              ? p.dim() == t.dim() + 1 && p.dim() >= 2 && p.size(1) == c && p.size(0) == t.size(0) &&
                                    p.sizes().slice(2) == t.sizes().slice(1)
                              : p.sizes() == t.sizes() && p.dim() >= 2 && p.size(1) == c;
  if (!shapes_fit) {
    throw std::invalid_argument(fmt::format(
        "[{}::update] expected {}, got preds [{}] and target [{}]", name(),
        task == Task::Binary       ? std::string("preds and target of one size")
        : task == Task::Multiclass ? fmt::format("preds [N, {}, ...] and target [N, ...]", c)
                                   : fmt::format("preds and target both [N, {}, ...]", c),
        fmt::join(preds.sizes(), ", "), fmt::join(target.sizes(), ", ")));
  }
  // One row per sample (and extra position), classes or labels in columns.
  if (task == Task::Binary) {
    p = p.reshape({-1});
    t = t.reshape({-1});
  } else {
    p = p.dim() == 2 ? p : p.movedim(1, -1).reshape({-1, c});
    t = task == Task::Multiclass ? t.reshape({-1}) : (t.dim() == 2 ? t : t.movedim(1, -1).reshape({-1, c}));
  }
  const torch::Tensor valid = ignore ? t != *ignore : torch::ones_like(t, torch::kBool);
  if (options_.validate_args() && t.device().is_cpu() && t.numel() > 0) {
    const int64_t top = task == Task::Multiclass ? c : 2;
    const torch::Tensor bad = valid & ((t < 0) | (t >= top));
    if (bad.any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[{}::update] target value {} is outside [0, {}){}", name(),
                                              t.masked_select(bad)[0].item<int64_t>(), top,
                                              ignore ? " and not ignore_index" : ""));
    }
  }
  begin_update(preds.device());
  // Logits or probabilities, decided per batch on the device as torchmetrics
  // does: multiclass and binary over the samples kept, multilabel over all.
  if (task == Task::Multiclass) {
    const torch::Tensor outside = (((p < 0) | (p > 1)) & valid.unsqueeze(1)).any();
    p = torch::where(outside, p.softmax(1), p);
  } else {
    const torch::Tensor outside = task == Task::Binary ? (((p < 0) | (p > 1)) & valid).any() : ((p < 0) | (p > 1)).any();
    p = torch::where(outside, p.sigmoid(), p);
  }
  append("preds", p);
  append("target", t);
}

torch::Tensor CurveMetric::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

torch::Tensor CurveMetric::compute_value() {
  const torch::Tensor preds = cat_state("preds");
  const torch::Tensor target = cat_state("target");
  const Task task = options_.task();
  const auto ignore = options_.ignore_index();
  if (task == Task::Binary) return curve_score(binary_curve(preds, target, ignore), false);
  if (task == Task::Multilabel && options_.average() == Average::Micro) {
    return curve_score(binary_curve(preds.reshape({-1}), target.reshape({-1}), ignore), false);
  }
  const int64_t c = options_.num_classes();
  std::vector<torch::Tensor> scores;
  torch::Tensor positives;  // per class: the weights of Weighted
  if (task == Task::Multiclass) {
    // One-vs-rest: ignored samples leave every class's curve.
    const torch::Tensor keep = ignore ? target != *ignore : torch::ones_like(target, torch::kBool);
    const torch::Tensor kept_preds = preds.index({keep});
    const torch::Tensor kept_target = target.masked_select(keep);
    for (int64_t k = 0; k < c; ++k) {
      scores.push_back(curve_score(binary_curve(kept_preds.select(1, k), (kept_target == k).to(torch::kLong), std::nullopt),
                                   true));
    }
    positives = torch::bincount(kept_target.to(torch::kCPU), {}, c).to(preds.device());
  } else {
    for (int64_t k = 0; k < c; ++k) scores.push_back(curve_score(binary_curve(preds.select(1, k), target.select(1, k), ignore), false));
    positives = (target == 1).sum(0);
  }
  const torch::Tensor score = torch::stack(scores);
  if (options_.average() == Average::None) return score;
  // A class whose score is undefined (nan) leaves the average, as in torchmetrics.
  const torch::Tensor defined = ~score.isnan();
  const torch::Tensor weights =
      (options_.average() == Average::Weighted ? positives.to(torch::kFloat64) : torch::ones_like(score)) *
      defined.to(torch::kFloat64);
  if (options_.average() == Average::Macro) {
    return torch::where(defined, score, torch::zeros_like(score)).sum() / defined.sum();
  }
  return safe_divide((weights * torch::where(defined, score, torch::zeros_like(score))).sum(), weights.sum());
}

}  // namespace fulgur::metrics
