#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// The sum of every value seen since reset(), over every process (torchmetrics.SumMetric).
class SumMetric : public Metric {
 public:
  SumMetric();
  /// Adds every element of `value` (any shape); no host read.
  void update(const torch::Tensor& value);
  void update(double value) { update(torch::tensor(value, torch::kFloat64)); }
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& value);

 protected:
  torch::Tensor compute_value() override;
};

}  // namespace fulgur::metrics
