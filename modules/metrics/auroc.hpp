#pragma once

#include <fulgur/modules/metrics/curve_metric.hpp>

namespace fulgur::metrics {

/// The area under the ROC curve, exact from every process's gathered scores:
/// torchmetrics' Binary/Multiclass/MultilabelAUROC with thresholds=None
/// (CurveMetric says which inputs and averages). A class without positives
/// or without negatives scores 0 and still counts in Macro, as there.
class AUROC : public CurveMetric {
 public:
  explicit AUROC(const StatScoresOptions& options = StatScoresOptions::binary()) : CurveMetric("AUROC", options) {}

 protected:
  torch::Tensor curve_score(const BinaryCurve& curve, bool one_vs_rest) const override;
};

/// The functional form (float64, this process only).
torch::Tensor auroc(const torch::Tensor& preds, const torch::Tensor& target,
                    const StatScoresOptions& options = StatScoresOptions::binary());

}  // namespace fulgur::metrics
