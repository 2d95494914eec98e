#include <fulgur/modules/metrics/stat_scores.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur::metrics {

StatScores::StatScores(const std::string& name, const StatScoresOptions& options, bool allows_top_k)
    : Metric(name), options_(options) {
  const int64_t c = options_.num_classes();
  const bool multilabel = options_.task() == Task::Multilabel;
  if (c < 2) {
    throw std::invalid_argument(
        fmt::format("[{}::{}] {} must be >= 2, got {}", name, name, multilabel ? "num_labels" : "num_classes", c));
  }
  if (options_.top_k() < 1 || options_.top_k() > c || (options_.top_k() > 1 && !allows_top_k) ||
      (options_.top_k() > 1 && options_.task() != Task::Multiclass)) {
    throw std::invalid_argument(fmt::format("[{}::{}] top_k must be {}, got {}", name, name,
                                            allows_top_k && options_.task() == Task::Multiclass
                                                ? fmt::format("in [1, {}]", c)
                                                : "1",
                                            options_.top_k()));
  }
  if (multilabel) {
    add_state("confmat", torch::zeros({c, 2, 2}, torch::kLong), Reduction::Sum);
  } else {
    add_state("confmat", torch::zeros({c, c}, torch::kLong), Reduction::Sum);
  }
  if (options_.top_k() > 1) add_state("hits", torch::zeros({c}, torch::kLong), Reduction::Sum);
}

namespace {

// Probabilities (sigmoid of logits when any value is outside [0, 1],
// decided on the device as torchmetrics does per call) above `threshold`,
// or 0/1 labels as they are.
torch::Tensor binary_labels(const torch::Tensor& p, double threshold) {
  if (!p.is_floating_point()) return p.to(torch::kLong);
  const torch::Tensor probs = torch::where(((p < 0) | (p > 1)).any(), p.sigmoid(), p);
  return (probs > threshold).to(torch::kLong);
}

}  // namespace

void StatScores::update(const torch::Tensor& preds, const torch::Tensor& target) {
  const int64_t c = options_.num_classes();
  begin_update(preds.device());
  // No detach(): every path ends in integer labels and counts, which
  // autograd does not record, and each saved op counts on a small batch.
  const torch::Tensor& p = preds;
  torch::Tensor t = target;
  if (t.device() != p.device()) t = t.to(p.device());
  if (options_.task() == Task::Multilabel) {
    update_multilabel(p, t);
    return;
  }
  if (t.dim() != 1) t = t.reshape({-1});
  if (t.scalar_type() != torch::kLong) t = t.to(torch::kLong);
  torch::Tensor labels, scores;
  if (options_.task() == Task::Binary) {
    if (p.numel() != t.numel()) {
      throw std::invalid_argument(fmt::format("[{}::update] binary preds [{}] and target [{}] differ in size", name(),
                                              fmt::join(p.sizes(), ", "), fmt::join(target.sizes(), ", ")));
    }
    labels = binary_labels(p.reshape({-1}), options_.threshold());
  } else if (p.dim() == target.dim() + 1 && p.dim() >= 2 && p.size(1) == c) {
    scores = p.dim() == 2 ? p : p.movedim(1, -1).reshape({-1, c});
    labels = scores.argmax(1);
  } else if (p.sizes() == target.sizes() && options_.top_k() == 1) {
    labels = p.reshape({-1}).to(torch::kLong);
  } else {
    throw std::invalid_argument(fmt::format(
        "[{}::update] expected preds [N, {}, ...] scores{} for target [{}], got [{}]", name(), c,
        options_.top_k() == 1 ? " or labels shaped like the target" : " (top_k > 1)", fmt::join(target.sizes(), ", "),
        fmt::join(p.sizes(), ", ")));
  }
  const auto ignore = options_.ignore_index();
  if (options_.validate_args() && t.device().is_cpu() && t.numel() > 0) {
    // Two reductions for the common case, every target and label in range;
    // the element-wise search only when something is out of it.
    const auto [t_min, t_max] = torch::aminmax(t);
    const auto [l_min, l_max] = torch::aminmax(labels);
    const int64_t r[4] = {t_min.item<int64_t>(), t_max.item<int64_t>(), l_min.item<int64_t>(), l_max.item<int64_t>()};
    if (r[0] < 0 || r[1] >= c || r[2] < 0 || r[3] >= c) {
      const torch::Tensor valid = ignore ? t != *ignore : torch::ones_like(t, torch::kBool);
      const torch::Tensor bad = valid & ((t < 0) | (t >= c));
      if (bad.any().item<bool>()) {
        throw std::invalid_argument(fmt::format("[{}::update] target value {} is outside [0, {}){}", name(),
                                                t.masked_select(bad)[0].item<int64_t>(), c,
                                                ignore ? " and not ignore_index" : ""));
      }
      if (r[2] < 0 || r[3] >= c) {
        throw std::invalid_argument(fmt::format("[{}::update] a predicted label is outside [0, {})", name(), c));
      }
    }
  }
  torch::Tensor& confmat = state("confmat");
  if (!ignore) {
    // Every sample counts: one bincount on the CPU (the hand-made way),
    // index_add elsewhere (a CUDA bincount reads its maximum on the host).
    const torch::Tensor cell = t * c + labels;
    if (cell.device().is_cpu()) {
      confmat.view({-1}).add_(torch::bincount(cell, {}, c * c));
    } else {
      confmat.view({-1}).index_add_(0, cell, torch::ones_like(cell));
    }
  } else {
    // Ignored targets (any value) land in a valid cell with weight 0.
    const torch::Tensor valid = t != *ignore;
    const torch::Tensor row = t.clamp(0, c - 1);
    confmat.view({-1}).index_add_(0, row * c + labels, valid.to(torch::kLong));
  }
  if (options_.top_k() > 1) {
    const torch::Tensor top = std::get<1>(scores.topk(options_.top_k(), 1));
    torch::Tensor hit = (top == t.unsqueeze(1)).any(1);
    if (ignore) hit = hit & (t != *ignore);
    state("hits").index_add_(0, t.clamp(0, c - 1), hit.to(torch::kLong));
  }
}

void StatScores::update_multilabel(const torch::Tensor& p, const torch::Tensor& target) {
  const int64_t labels_n = options_.num_classes();
  if (p.sizes() != target.sizes() || p.dim() < 2 || p.size(1) != labels_n) {
    throw std::invalid_argument(fmt::format("[{}::update] multilabel preds and target must both be [N, {}, ...], got [{}] and [{}]",
                                            name(), labels_n, fmt::join(p.sizes(), ", "),
                                            fmt::join(target.sizes(), ", ")));
  }
  // [N * ..., L]: one row per sample (and extra position), one column per label.
  const torch::Tensor labels = binary_labels(p.dim() == 2 ? p : p.movedim(1, -1).reshape({-1, labels_n}),
                                             options_.threshold());
  torch::Tensor t = target.dim() == 2 ? target : target.movedim(1, -1).reshape({-1, labels_n});
  if (t.scalar_type() != torch::kLong) t = t.to(torch::kLong);
  const auto ignore = options_.ignore_index();
  const torch::Tensor valid = ignore ? t != *ignore : torch::Tensor();
  if (options_.validate_args() && t.device().is_cpu()) {
    const torch::Tensor bad = ((t != 0) & (t != 1)) & (valid.defined() ? valid : torch::ones_like(t, torch::kBool));
    if (bad.any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[{}::update] multilabel target value {} is not 0 or 1{}", name(),
                                              t.masked_select(bad)[0].item<int64_t>(),
                                              ignore ? " nor ignore_index" : ""));
    }
    if (((labels != 0) & (labels != 1)).any().item<bool>()) {
      throw std::invalid_argument(fmt::format("[{}::update] a multilabel prediction label is not 0 or 1", name()));
    }
  }
  // Cell of (label, target, prediction) in the [L, 2, 2] matrix.
  const torch::Tensor label_index = torch::arange(labels_n, t.options()).unsqueeze(0);
  const torch::Tensor cell = (label_index * 4 + t.clamp(0, 1) * 2 + labels).reshape({-1});
  const torch::Tensor weight = valid.defined() ? valid.to(torch::kLong).reshape({-1}) : torch::ones_like(cell);
  state("confmat").view({-1}).index_add_(0, cell, weight);
}

torch::Tensor StatScores::forward(const torch::Tensor& preds, const torch::Tensor& target) {
  return forward_with([&] { update(preds, target); });
}

StatScores::Counts StatScores::counts() {
  const torch::Tensor cm = state("confmat").to(torch::kFloat64);
  if (options_.task() == Task::Binary) return {cm[1][1], cm[0][1], cm[1][0], cm[0][0]};
  if (options_.task() == Task::Multilabel) {
    using torch::indexing::Slice;
    return {cm.index({Slice(), 1, 1}), cm.index({Slice(), 0, 1}), cm.index({Slice(), 1, 0}),
            cm.index({Slice(), 0, 0})};
  }
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
    case Average::Weighted: return weighted_mean(score(c), c.tp + c.fn);
    case Average::Macro: break;
  }
  // Multilabel: every label counts (torchmetrics' multilabel macro).
  if (options_.task() == Task::Multilabel) return score(c).mean();
  // torchmetrics leaves out classes nobody predicted or labelled (top_k > 1:
  // classes without targets).
  const torch::Tensor absent = options_.top_k() == 1 ? (c.tp + c.fp + c.fn) == 0 : (c.tp + c.fn) == 0;
  return weighted_mean(score(c), (~absent).to(torch::kFloat64));
}

}  // namespace fulgur::metrics
