#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// Mean of |preds - target| over every element of every batch and process (torchmetrics.MeanAbsoluteError).
class MeanAbsoluteError : public Metric {
 public:
  MeanAbsoluteError();
  /// `preds` and `target` of one shape (any); float64 sums on their device.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor mean_absolute_error(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
