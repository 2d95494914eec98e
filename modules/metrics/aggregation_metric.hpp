#pragma once

#include <fulgur/modules/metrics/metric.hpp>

#include <torch/torch.h>

namespace fulgur::metrics {

/// One number aggregated over every value seen since reset() and over every
/// process, torchmetrics' aggregation metrics: the state combines within a
/// process as it combines across processes, so `R` says both. Sum, Max
/// (-inf before any value), Min (+inf before any value), or Mean: the
/// weighted mean sum(value * weight) / sum(weight), both sums reduced
/// across processes before dividing. Use the names below.
template <Reduction R>
class AggregationMetric : public Metric {
  static_assert(R != Reduction::Cat, "AggregationMetric aggregates to one number");

 public:
  AggregationMetric();
  /// Adds every element of `value` (any shape); no host read.
  void update(const torch::Tensor& value);
  // The Mean-only overloads are templates (Q is always R) so that the .cpp's
  // `template class` leaves them out for Sum, Max and Min: clang 14 would
  // instantiate a constrained plain member there regardless.

  /// MeanMetric: `weight` broadcasts against `value`.
  template <Reduction Q = R>
    requires(Q == Reduction::Mean)
  void update(const torch::Tensor& value, const torch::Tensor& weight);
  void update(double value) { update(torch::tensor(value, torch::kFloat64)); }
  template <Reduction Q = R>
    requires(Q == Reduction::Mean)
  void update(double value, double weight) {
    update(torch::tensor(value, torch::kFloat64), torch::tensor(weight, torch::kFloat64));
  }
  /// update() and this batch's value alone.
  torch::Tensor forward(const torch::Tensor& value);
  template <Reduction Q = R>
    requires(Q == Reduction::Mean)
  torch::Tensor forward(const torch::Tensor& value, const torch::Tensor& weight);

 protected:
  torch::Tensor compute_value() override;
};

/// torchmetrics.SumMetric, MaxMetric, MinMetric, MeanMetric.
using SumMetric = AggregationMetric<Reduction::Sum>;
using MaxMetric = AggregationMetric<Reduction::Max>;
using MinMetric = AggregationMetric<Reduction::Min>;
using MeanMetric = AggregationMetric<Reduction::Mean>;

extern template class AggregationMetric<Reduction::Sum>;
extern template class AggregationMetric<Reduction::Max>;
extern template class AggregationMetric<Reduction::Min>;
extern template class AggregationMetric<Reduction::Mean>;

}  // namespace fulgur::metrics
