#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/metric_sink.hpp>

namespace fulgur {

/// Routes a module's log() calls to `sink` while it lives and back to where
/// they went before when it ends (nullptr: log() is an error). The loops
/// hold one for each pass; a callback that runs training_step outside the
/// loops (SWA's BatchNorm pass) holds one with a sink that discards.
class ScopedMetricSink {
 public:
  ScopedMetricSink(LightningModule& module, MetricSink* sink) : module_(module), previous_(module.results_) {
    module_.results_ = sink;
  }
  ~ScopedMetricSink() { module_.results_ = previous_; }
  ScopedMetricSink(const ScopedMetricSink&) = delete;
  ScopedMetricSink& operator=(const ScopedMetricSink&) = delete;

 private:
  LightningModule& module_;
  MetricSink* previous_;
};

}  // namespace fulgur
