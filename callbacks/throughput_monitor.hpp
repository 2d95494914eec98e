#pragma once

#include <fulgur/modules/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// Options of ThroughputMonitor, with the names of Lightning's Throughput.
#define FULGUR_THROUGHPUT_MONITOR_OPTIONS(X)                                                                     \
  X(int64_t, window_size, 100, "batches the rolling rates are computed over", fulgur::check::AtLeast{2})       \
  X(std::optional<double>, available_flops, std::nullopt,                                                      \
    "peak FLOP/s of one device, for device/mfu; null: known GPUs' dense bf16/fp16 peak, none on CPU",           \
    fulgur::check::Positive{})                                                                                 \
  X(std::string, separator, "/", "key separator: train/device/samples_per_sec", fulgur::check::NotEmpty{})

struct ThroughputMonitorOptions {
  FULGUR_OPTIONS(ThroughputMonitorOptions, FULGUR_THROUGHPUT_MONITOR_OPTIONS)
};

/// Logs training throughput (Lightning's ThroughputMonitor) every
/// log_every_n_steps, from rank 0, once `window_size` batches were seen:
///   train/time, train/batches, train/samples (running totals on this device),
///   train/device/batches_per_sec, train/device/samples_per_sec (over the window),
///   train/batches_per_sec, train/samples_per_sec (times the world size, when > 1),
///   train/device/flops_per_sec, train/flops_per_sec, train/device/mfu
///     (when LightningModule::flops_per_batch() says; mfu needs the peak).
/// Time spent in validation is left out of the training rates.
class ThroughputMonitor : public Callback {
 public:
  using Options = ThroughputMonitorOptions;
  explicit ThroughputMonitor(ThroughputMonitorOptions options = {});

  std::string state_key() const override { return "ThroughputMonitor"; }
  void on_train_start(Trainer& trainer, LightningModule& module) override;
  void on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& loss, const Batch& batch,
                          int64_t batch_idx) override;
  void on_validation_start(Trainer& trainer, LightningModule& module) override;
  void on_validation_end(Trainer& trainer, LightningModule& module) override;

  /// The values as they would be logged now (without the stage prefix).
  std::map<std::string, double> compute() const;
  /// Dense peak FLOP/s of a CUDA device by its name ("NVIDIA H100 80GB HBM3")
  /// for `precision` ("32-true", "bf16-mixed", ...); nullopt when not known.
  static std::optional<double> peak_flops(const std::string& device_name, const std::string& precision);
  const ThroughputMonitorOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Sample {
    double time;  // seconds of training since on_train_start
    int64_t batches;
    int64_t samples;
    std::optional<double> flops;  // of this batch
  };

  ThroughputMonitorOptions options_;
  std::deque<Sample> window_;
  Clock::time_point t0_;
  Clock::time_point validation_started_;
  int64_t batches_ = 0;
  int64_t samples_ = 0;
  int64_t world_size_ = 1;
  bool synchronize_cuda_ = false;
  std::optional<double> available_flops_;
};

}  // namespace fulgur
