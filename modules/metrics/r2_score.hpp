#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// The coefficient of determination 1 - RSS / TSS of one output, from sums over every batch and process (torchmetrics.R2Score, uniform one-output case).
class R2Score : public Metric {
 public:
  R2Score();
  /// `preds` and `target` of one shape (any); float64 sums on their device.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor r2_score(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
