#pragma once

#include <fulgur/modules/metrics/curve_metric.hpp>

namespace fulgur::metrics {

/// Average precision sum_k (R_k - R_{k-1}) P_k over every distinct score,
/// exact from every process's gathered scores: torchmetrics' Binary/
/// Multiclass/MultilabelAveragePrecision with thresholds=None (CurveMetric
/// says which inputs and averages). Without positives the recall is
/// undefined: a multiclass class then scores nan and leaves Macro and
/// Weighted; a binary task or a label scores 0, as there.
class AveragePrecision : public CurveMetric {
 public:
  explicit AveragePrecision(const StatScoresOptions& options = StatScoresOptions::binary())
      : CurveMetric("AveragePrecision", options) {}

 protected:
  torch::Tensor curve_score(const BinaryCurve& curve, bool one_vs_rest) const override;
};

/// The functional form (float64, this process only).
torch::Tensor average_precision(const torch::Tensor& preds, const torch::Tensor& target,
                                const StatScoresOptions& options = StatScoresOptions::binary());

}  // namespace fulgur::metrics
