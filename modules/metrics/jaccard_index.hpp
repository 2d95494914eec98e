#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// Intersection over union tp / (tp + fp + fn) from counts over every batch
/// and process, torchmetrics' Binary/Multiclass/MultilabelJaccardIndex:
/// multiclass Macro leaves out ignore_index's class and classes nobody
/// predicted or labelled; multilabel Macro counts every label; Weighted
/// weighs by support (tp + fn). The IoU of a segmentation epoch, exact on
/// any number of ranks.
class JaccardIndex : public StatScores {
 public:
  explicit JaccardIndex(const StatScoresOptions& options);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form: one JaccardIndex over these inputs (this process only).
torch::Tensor jaccard_index(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
