#pragma once

#include <fulgur/modules/log_options.hpp>
#include <fulgur/modules/metrics/metric.hpp>

#include <torch/torch.h>

#include <string>

namespace fulgur {

/// Where LightningModule::log() sends a value while a loop runs; the Trainer
/// attaches its loop's ResultCollection. Kept here so the module layer does
/// not depend on the trainer.
class MetricSink {
 public:
  virtual ~MetricSink() = default;
  virtual void log(const std::string& name, const torch::Tensor& value, const LogOptions& options) = 0;
  /// A Metric object: its forward() batch value on_step, its compute() at
  /// the epoch's end (then reset()).
  virtual void log(const std::string& name, metrics::Metric& metric, const LogOptions& options) = 0;
};

}  // namespace fulgur
