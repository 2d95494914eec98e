#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/strategies/precision_mode.hpp>
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

/// Logs throughput (Lightning's ThroughputMonitor), from rank 0, with the
/// stage as prefix: `train` every log_every_n_steps optimizer steps,
/// `validate` (inside fit and in validate(); not in the sanity check) and
/// `test` every log_every_n_steps of their batches, at the stage's running
/// batch count as step:
///   <stage>/time, <stage>/batches, <stage>/samples (running totals of this run of the stage),
///   <stage>/device/batches_per_sec, <stage>/device/samples_per_sec (over the last window_size batches),
///   <stage>/batches_per_sec, <stage>/samples_per_sec (times the world size, when > 1),
///   <stage>/device/flops_per_sec, <stage>/flops_per_sec, <stage>/device/mfu
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
  void on_validation_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch,
                               int64_t batch_idx) override;
  void on_validation_end(Trainer& trainer, LightningModule& module) override;
  void on_test_start(Trainer& trainer, LightningModule& module) override;
  void on_test_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch, int64_t batch_idx) override;

  /// The values of `stage` ("train", "validate", "test") as they would be
  /// logged now (without the stage prefix); empty before its first batch.
  std::map<std::string, double> compute(const std::string& stage = "train") const;
  /// Dense peak FLOP/s of a CUDA device by its name ("NVIDIA H100 80GB HBM3")
  /// for `precision`; nullopt when not known.
  static std::optional<double> peak_flops(const std::string& device_name, PrecisionMode precision);
  const ThroughputMonitorOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Sample {
    double time;  // seconds since the stage started
    int64_t batches;
    int64_t samples;
    std::optional<double> flops;  // of this batch
  };
  /// One stage's rolling window; restarted at every run of the stage.
  struct Meter {
    std::deque<Sample> window;
    Clock::time_point t0;
    int64_t batches = 0;
    int64_t samples = 0;
    int64_t total_batches = 0;  // over every run of the stage: the step it logs at
  };

  void start(Trainer& trainer, const std::string& stage);
  /// Adds a finished batch to `stage`'s window.
  void update(Trainer& trainer, LightningModule& module, const std::string& stage, const Batch& batch);
  void log(Trainer& trainer, const std::string& stage, int64_t step) const;

  ThroughputMonitorOptions options_;
  std::map<std::string, Meter> meters_;
  Clock::time_point validation_started_;
  int64_t world_size_ = 1;
  bool synchronize_cuda_ = false;
  std::optional<double> available_flops_;
};

}  // namespace fulgur
