#pragma once

#include <fulgur/modules/metrics/metric.hpp>

#include <initializer_list>
#include <string>

namespace fulgur::metrics {

/// The shape of the regression metrics (MeanAbsoluteError,
/// MeanSquaredError, PearsonCorrCoef, R2Score): float64 sums over every
/// element of every batch and process, reduced by Sum, fed by
/// update(preds, target) of one shape (any). A subclass names its sums in
/// the constructor, adds a batch to them in accumulate() and computes the
/// value from them in compute_value().
class RegressionMetric : public Metric {
 public:
  /// `preds` and `target` of one shape (any); float64 sums on their device.
  void update(const torch::Tensor& preds, const torch::Tensor& target);
  torch::Tensor forward(const torch::Tensor& preds, const torch::Tensor& target);

 protected:
  /// `name`: the class, as errors and the module tree show it; `sums`: the
  /// states, zero at first (their names are the checkpoint's keys).
  RegressionMetric(const std::string& name, std::initializer_list<const char*> sums);
  /// Adds one batch, flattened to float64 on one device, to the sums.
  virtual void accumulate(const torch::Tensor& preds, const torch::Tensor& target) = 0;
  /// state(name) += value.
  void add(const char* name, const torch::Tensor& value);
  /// The number of elements of `preds` as a float64 scalar on its device (for a "total" sum).
  static torch::Tensor count(const torch::Tensor& preds);

 private:
  std::string name_;
};

}  // namespace fulgur::metrics
