#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// F-beta (1 + b^2) tp / ((1 + b^2) tp + b^2 fn + fp) from counts over every
/// batch and process, torchmetrics' Multiclass/Binary/MultilabelFBetaScore.
class FBetaScore : public StatScores {
 public:
  FBetaScore(const StatScoresOptions& options, double beta);

 protected:
  FBetaScore(const std::string& name, const StatScoresOptions& options, double beta);
  torch::Tensor compute_value() override;

 private:
  double beta_;
};

/// The functional form: one FBetaScore over these inputs (this process only).
torch::Tensor fbeta_score(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options,
                          double beta);

}  // namespace fulgur::metrics
