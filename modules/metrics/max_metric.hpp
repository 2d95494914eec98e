#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// The largest value seen since reset(), over every process (torchmetrics.MaxMetric); -inf before any.
class MaxMetric : public Metric {
 public:
  MaxMetric();
  /// Adds every element of `value` (any shape); no host read.
  void update(const torch::Tensor& value);
  void update(double value) { update(torch::tensor(value, torch::kFloat64)); }
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& value);

 protected:
  torch::Tensor compute_value() override;
};

}  // namespace fulgur::metrics
