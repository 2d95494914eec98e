#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// The Dice coefficient 2 tp / (2 tp + fp + fn) from counts over every
/// batch and process: torchmetrics.segmentation.DiceScore with
/// aggregation_level="global", index inputs (multiclass, binary) or one-hot
/// inputs (multilabel: a 0/1 mask per label). Macro: the mean over classes
/// predicted or labelled; Weighted: weighted by support (tp + fn). A mean of
/// per-batch Dice values would not be the Dice.
class Dice : public StatScores {
 public:
  explicit Dice(const StatScoresOptions& options);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form: one Dice over these inputs (this process only).
torch::Tensor dice(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
