#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// Recall tp / (tp + fn), torchmetrics' Multiclass/Binary/MultilabelRecall (0 where a class has no targets).
class Recall : public StatScores {
 public:
  explicit Recall(const StatScoresOptions& options);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form: one Recall over these inputs (this process only).
torch::Tensor recall(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
