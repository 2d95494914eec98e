#pragma once

#include <fulgur/modules/metrics/metric.hpp>

namespace fulgur::metrics {

/// The weighted mean of every value seen since reset(), over every process
/// (torchmetrics.MeanMetric): sum(value * weight) / sum(weight), the two
/// sums reduced across processes before dividing.
class MeanMetric : public Metric {
 public:
  MeanMetric();
  /// `weight` broadcasts against `value` (undefined: 1 per element); no host read.
  void update(const torch::Tensor& value, const torch::Tensor& weight = {});
  void update(double value, double weight = 1.0) {
    update(torch::tensor(value, torch::kFloat64), torch::tensor(weight, torch::kFloat64));
  }
  torch::Tensor forward(const torch::Tensor& value, const torch::Tensor& weight = {});

 protected:
  torch::Tensor compute_value() override;
};

}  // namespace fulgur::metrics
