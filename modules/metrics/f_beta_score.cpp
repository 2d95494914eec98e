#include <fulgur/modules/metrics/f_beta_score.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur::metrics {

FBetaScore::FBetaScore(const StatScoresOptions& options, double beta) : FBetaScore("FBetaScore", options, beta) {}

FBetaScore::FBetaScore(const std::string& name, const StatScoresOptions& options, double beta)
    : StatScores(name, options), beta_(beta) {
  if (!(beta > 0)) throw std::invalid_argument(fmt::format("[{}::{}] beta must be > 0, got {}", name, name, beta));
}

torch::Tensor FBetaScore::compute_value() {
  const double b2 = beta_ * beta_;
  return reduce([b2](const Counts& c) { return safe_divide((1 + b2) * c.tp, (1 + b2) * c.tp + b2 * c.fn + c.fp); });
}

torch::Tensor fbeta_score(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options,
                          double beta) {
  FBetaScore metric(options, beta);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
