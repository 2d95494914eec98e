#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

namespace fulgur::metrics {

/// The confusion matrix [C, C] (int64; rows: target, columns: prediction;
/// binary: 2 x 2; multilabel: [L, 2, 2] of [[tn, fp], [fn, tp]]) summed
/// over every batch and process, torchmetrics' Multiclass/Binary/
/// MultilabelConfusionMatrix without normalisation.
class ConfusionMatrix : public StatScores {
 public:
  explicit ConfusionMatrix(const StatScoresOptions& options) : StatScores("ConfusionMatrix", options) {}

 protected:
  torch::Tensor compute_value() override { return state("confmat").clone(); }
};

/// The functional form: the confusion matrix of these inputs.
inline torch::Tensor confusion_matrix(const torch::Tensor& preds, const torch::Tensor& target,
                                      const StatScoresOptions& options) {
  ConfusionMatrix metric(options);
  metric.update(preds, target);
  return metric.compute();
}

}  // namespace fulgur::metrics
