#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// The smallest value seen since reset(), over every process (torchmetrics.MinMetric); +inf before any.
class MinMetric : public Metric {
 public:
  MinMetric();
  /// Adds every element of `value` (any shape); no host read.
  void update(const torch::Tensor& value);
  void update(double value) { update(torch::tensor(value, torch::kFloat64)); }
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& value);

 protected:
  torch::Tensor compute_value() override;
};

}  // namespace fulgur::metrics
