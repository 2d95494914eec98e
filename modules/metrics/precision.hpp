#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// Precision tp / (tp + fp), torchmetrics' Multiclass/Binary/MultilabelPrecision (0 where nothing was predicted).
class Precision : public StatScores {
 public:
  explicit Precision(const StatScoresOptions& options);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form: one Precision over these inputs (this process only).
torch::Tensor precision(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
