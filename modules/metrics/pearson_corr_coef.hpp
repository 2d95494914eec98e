#pragma once

#include <fulgur/modules/metrics/regression_metric.hpp>

namespace fulgur::metrics {

/// Pearson's correlation of preds and target over every batch and process, from float64 sums (torchmetrics.PearsonCorrCoef, one output).
class PearsonCorrCoef : public RegressionMetric {
 public:
  PearsonCorrCoef();

 protected:
  void accumulate(const torch::Tensor& preds, const torch::Tensor& target) override;
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor pearson_corrcoef(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
