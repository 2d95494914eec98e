#pragma once

#include <fulgur/modules/metrics/stat_scores.hpp>

#include <torch/torch.h>

namespace fulgur::metrics {

/// Fraction of rows of `logits` ([N, C]) whose `target` class is among the
/// top_k scores. Returns a float32 scalar on the logits' device (no sync).
torch::Tensor accuracy(const torch::Tensor& logits, const torch::Tensor& target, int64_t top_k = 1);

/// Accuracy from counts over every batch and process, torchmetrics'
/// MulticlassAccuracy (Micro: hits / samples; Macro: the mean recall over
/// the classes present; top_k), BinaryAccuracy and MultilabelAccuracy
/// (right 0/1 decisions over all decisions; Macro: the mean over labels).
class Accuracy : public StatScores {
 public:
  explicit Accuracy(const StatScoresOptions& options) : StatScores("Accuracy", options, /*allows_top_k=*/true) {}

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form of Accuracy with every option (float64, this process only).
torch::Tensor accuracy(const torch::Tensor& preds, const torch::Tensor& target, const StatScoresOptions& options);

}  // namespace fulgur::metrics
