#include <fulgur/modules/metrics/stat_scores.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

StatScores::StatScores(const std::string& name, const StatScoresOptions& options, bool allows_top_k)
    : Metric(name), options_(options) {
  const int64_t c = options_.num_classes();
  if (c < 2) throw std::invalid_argument(fmt::format("[{}::{}] num_classes must be >= 2, got {}", name, name, c));
  if (options_.top_k() < 1 || options_.top_k() > c || (options_.top_k() > 1 && !allows_top_k) ||
      (options_.top_k() > 1 && options_.task() == Task::Binary)) {
    throw std::invalid_argument(fmt::format("[{}::{}] top_k must be {}, got {}", name, name,
                                            allows_top_k ? fmt::format("in [1, {}]", c) : "1", options_.top_k()));
  }
  add_state("confmat", torch::zeros({c, c}, torch::kLong), Reduction::Sum);
  if (options_.top_k() > 1) add_state("hits", torch::zeros({c}, torch::kLong), Reduction::Sum);
}

void StatScores::update(const torch::Tensor& preds, const torch::Tensor& target) {
  const int64_t c = options_.num_classes();
  begin_update(preds.device());
  const torch::Tensor p = preds.detach();
  const torch::Tensor t = target.detach().to(p.device()).reshape({-1}).to(torch::kLong);
  torch::Tensor labels, scores;
  if (options_.task() == Task::Binary) {
    if (p.numel() != t.numel()) {
      throw std::invalid_argument(fmt::format("[{}::update] binary preds [{}] and target [{}] differ in size", name(),
                                              fmt::join(p.sizes(), ", "), fmt::join(target.sizes(), ", ")));
    }
    torch::Tensor flat = p.reshape({-1});
    if (flat.is_floating_point()) {
      flat = torch::where(((flat < 0) | (flat > 1)).any(), flat.sigmoid(), flat);
      labels = (flat > options_.threshold()).to(torch::kLong);
    } else {
      labels = flat.to(torch::kLong);
    }
  } else if (p.dim() == target.dim() + 1 && p.dim() >= 2 && p.size(1) == c) {
    scores = p.movedim(1, -1).reshape({-1, c});
    labels = scores.argmax(1);
  } else if (p.sizes() == target.sizes() && options_.top_k() == 1) {
    labels = p.reshape({-1}).to(torch::kLong);
  } else {
    throw std::invalid_argument(fmt::format(
        "[{}::update] expected preds [N, {}, ...] scores{} for target [{}], got [{}]", name(), c,
        options_.top_k() == 1 ? " or labels shaped like the target" : " (top_k > 1)", fmt::join(target.sizes(), ", "),
        fmt::join(p.sizes(), ", ")));
  }
  const torch::Tensor valid = options_.ignore_index() ? t != *options_.ignore_index() : torch::ones_like(t, torch::kBool);
  if (t.device().is_cpu()) {
    const torch::Tensor bad = valid & ((t < 0) | (t >= c));
    if (bad.any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[{}::update] target value {} is outside [0, {}){}", name(),
                                              t.masked_select(bad)[0].item<int64_t>(), c,
                                              options_.ignore_index() ? " and not ignore_index" : ""));
    }
    if (((labels < 0) | (labels >= c)).any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[{}::update] a predicted label is outside [0, {})", name(), c));
    }
  }
  // Ignored targets (any value) land in a valid cell with weight 0.
  const torch::Tensor row = t.clamp(0, c - 1);
  const torch::Tensor weight = valid.to(torch::kLong);
  state("confmat") = state("confmat").view({-1}).index_add(0, row * c + labels, weight).view({c, c});
  if (options_.top_k() > 1) {
    const torch::Tensor top = std::get<1>(scores.topk(options_.top_k(), 1));
    const torch::Tensor hit = (top == t.unsqueeze(1)).any(1) & valid;
    state("hits") = state("hits").index_add(0, row, hit.to(torch::kLong));
  }
}

torch::Tensor StatScores::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

StatScores::Counts StatScores::counts() {
  const torch::Tensor cm = state("confmat").to(torch::kFloat64);
  if (options_.task() == Task::Binary) return {cm[1][1], cm[0][1], cm[1][0], cm[0][0]};
  torch::Tensor tp = cm.diag();
  const torch::Tensor fp = cm.sum(0) - tp;
  torch::Tensor fn = cm.sum(1) - tp;
  if (options_.top_k() > 1) {
    // A hit is a true positive of the target's class, a miss a false negative.
    tp = state("hits").to(torch::kFloat64);
    fn = cm.sum(1) - tp;
  }
  const torch::Tensor tn = cm.sum() - tp - fp - fn;
  return {tp, fp, fn, tn};
}

torch::Tensor StatScores::weighted_mean(const torch::Tensor& score, const torch::Tensor& weights) {
  return safe_divide((weights * score).sum(), weights.sum());
}

torch::Tensor StatScores::reduce(const std::function<torch::Tensor(const Counts&)>& score) {
  const Counts c = counts();
  if (options_.task() == Task::Binary) return score(c);
  switch (options_.average()) {
    case Average::Micro: return score({c.tp.sum(), c.fp.sum(), c.fn.sum(), c.tn.sum()});
    case Average::None: return score(c);
    case Average::Macro: break;
  }
  // torchmetrics leaves out classes nobody predicted or labelled (top_k > 1:
  // classes without targets).
  const torch::Tensor absent = options_.top_k() == 1 ? (c.tp + c.fp + c.fn) == 0 : (c.tp + c.fn) == 0;
  return weighted_mean(score(c), (~absent).to(torch::kFloat64));
}

}  // namespace fulgur::metrics
