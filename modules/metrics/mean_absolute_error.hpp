#pragma once

#include <fulgur/modules/metrics/regression_metric.hpp>

namespace fulgur::metrics {

/// Mean of |preds - target| over every element of every batch and process (torchmetrics.MeanAbsoluteError).
class MeanAbsoluteError : public RegressionMetric {
 public:
  MeanAbsoluteError();

 protected:
  void accumulate(const torch::Tensor& preds, const torch::Tensor& target) override;
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor mean_absolute_error(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
