#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// Pearson's correlation of preds and target over every batch and process, from float64 sums (torchmetrics.PearsonCorrCoef, one output).
class PearsonCorrCoef : public Metric {
 public:
  PearsonCorrCoef();
  /// `preds` and `target` of one shape (any); float64 sums on their device.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);

 protected:
  torch::Tensor compute_value() override;
};

/// The functional form (float64, this process only).
torch::Tensor pearson_corrcoef(const torch::Tensor& preds, const torch::Tensor& target);

}  // namespace fulgur::metrics
