#pragma once

#include <fulgur/modules/metrics/metric.hpp>
#include <fulgur/modules/metrics/stat_scores.hpp>

#include <torch/torch.h>

#include <cstdint>

namespace fulgur::metrics {

/// How CalibrationError combines the bins' gaps |accuracy - confidence|:
/// L1 weighs them by the bins' shares (the expected calibration error,
/// ECE), L2 is the root of the weighted squares (RMSCE), Max the largest (MCE).
enum class CalibrationNorm { L1, L2, Max };

/// The top-label calibration error, torchmetrics' BinaryCalibrationError /
/// MulticlassCalibrationError: confidences (binary: the positive class's
/// probability; multiclass: the highest softmax probability) fall into
/// `n_bins` equal bins of [0, 1] (torchmetrics' n_bins + 1-th bin holds
/// exactly 1.0), and each bin compares its mean confidence with its share
/// of hits (binary: of positive targets). The states are per-bin sums
/// (count, confidence, hits), so update() keeps no scores and compute()
/// reduces three small vectors over the processes. Multiclass confidences
/// are rounded to float32 before binning, as torchmetrics does, so the same
/// sample lands in the same bin; the sums are float64.
class CalibrationError : public Metric {
 public:
  /// `options`: StatScoresOptions::binary() or StatScoresOptions(num_classes),
  /// with ignore_index and validate_args (threshold, average and top_k do
  /// not apply).
  explicit CalibrationError(const StatScoresOptions& options, int64_t n_bins = 15,
                            CalibrationNorm norm = CalibrationNorm::L1);
  /// Binary: `preds` probabilities (logits when any is outside [0, 1]) and
  /// 0/1 `target` of one size. Multiclass: `preds` [N, C, ...] probabilities
  /// (logits, softmaxed over dimension 1, when any is outside [0, 1]) and
  /// `target` [N, ...] class indices. Device operations only.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);
  const StatScoresOptions& options() const { return options_; }

 protected:
  torch::Tensor compute_value() override;

 private:
  StatScoresOptions options_;
  int64_t n_bins_;
  CalibrationNorm norm_;
};

/// The functional form (float64, this process only).
torch::Tensor calibration_error(const torch::Tensor& preds, const torch::Tensor& target,
                                const StatScoresOptions& options, int64_t n_bins = 15,
                                CalibrationNorm norm = CalibrationNorm::L1);

}  // namespace fulgur::metrics
