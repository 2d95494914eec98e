#pragma once

#include <fulgur/modules/metrics/f_beta_score.hpp>

namespace fulgur::metrics {

/// F1 = 2 tp / (2 tp + fp + fn) from counts over every batch and process,
/// torchmetrics' Multiclass/Binary/MultilabelF1Score. (A mean of per-batch F1
/// values is not the F1 of the epoch.)
class F1Score : public FBetaScore {
 public:
  explicit F1Score(const StatScoresOptions& options) : FBetaScore("F1Score", options, 1.0) {}
};

/// The functional form: one F1Score over these inputs (this process only).
inline torch::Tensor f1_score(const torch::Tensor& preds, const torch::Tensor& target,
                              const StatScoresOptions& options) {
  return fbeta_score(preds, target, options, 1.0);
}

}  // namespace fulgur::metrics
