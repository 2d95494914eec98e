#pragma once

#include <fulgur/modules/metrics/regression_metric.hpp>

namespace fulgur::metrics {

/// The coefficient of determination 1 - RSS / TSS of one output, from sums over every batch and process (torchmetrics.R2Score, uniform one-output case).
class R2Score : public RegressionMetric {
 public:
  R2Score();

 protected:
  void accumulate(const torch::Tensor& preds, const torch::Tensor& target) override;
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor r2_score(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
