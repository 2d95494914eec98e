#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// The Dice coefficient 2 tp / (2 tp + fp + fn) from counts over every batch and process: torchmetrics.segmentation.DiceScore with aggregation_level="global" and index inputs (Macro: the mean over classes present; a mean of per-batch Dice values would not be the Dice).
class Dice : public StatScores {
 public:
  explicit Dice(const StatScoresOptions& options);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form: one Dice over these inputs (this process only).
torch::Tensor dice(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
