#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// Options of DeviceStatsMonitor, with Lightning's names and defaults.
#define FULGUR_DEVICE_STATS_MONITOR_OPTIONS(X)                                                                \
  X(std::optional<bool>, cpu_stats, std::nullopt,                                                            \
    "log the CPU's stats (cpu_percent, cpu_vm_percent, cpu_swap_percent); null: on a CPU run only, false: never", \
    fulgur::check::Any{})

struct DeviceStatsMonitorOptions {
  FULGUR_OPTIONS(DeviceStatsMonitorOptions, FULGUR_DEVICE_STATS_MONITOR_OPTIONS)
};

/// Logs the device's statistics at the start and end of training,
/// validation and test batches, every log_every_n_steps of them, from rank 0
/// (Lightning's DeviceStatsMonitor), as
/// `DeviceStatsMonitor.on_train_batch_start/<key>`, `..._end/<key>`,
/// `DeviceStatsMonitor.on_validation_batch_start/<key>`, ... at the global step:
/// - CPU (from /proc): cpu_percent (all CPUs' busy share since the last
///   reading), cpu_vm_percent (memory in use), cpu_swap_percent;
/// - CUDA: the caching allocator's statistics with torch.cuda.memory_stats()'s
///   keys (allocated_bytes.all.current, reserved_bytes.all.peak, num_ooms, ...)
///   and, where the driver's NVML library is installed, utilization.gpu (%),
///   memory.used (MB), temperature.gpu (C), power.draw (W), ...
class DeviceStatsMonitor : public Callback {
 public:
  using Options = DeviceStatsMonitorOptions;
  explicit DeviceStatsMonitor(DeviceStatsMonitorOptions options = {});

  std::string state_key() const override { return "DeviceStatsMonitor"; }
  void on_train_start(Trainer& trainer, LightningModule& module) override;
  void on_train_batch_start(Trainer& trainer, LightningModule& module, const Batch& batch, int64_t batch_idx) override;
  void on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& loss, const Batch& batch,
                          int64_t batch_idx) override;
  void on_validation_batch_start(Trainer& trainer, LightningModule& module, const Batch& batch,
                                 int64_t batch_idx) override;
  void on_validation_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch,
                               int64_t batch_idx) override;
  void on_test_batch_start(Trainer& trainer, LightningModule& module, const Batch& batch, int64_t batch_idx) override;
  void on_test_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch, int64_t batch_idx) override;

  /// The statistics of `device` as they would be logged now, without prefix.
  std::map<std::string, double> device_stats(const torch::Device& device);

 private:
  /// Logs at `step` when `batch_number` (from 1) is a multiple of log_every_n_steps.
  void log(Trainer& trainer, const std::string& hook, int64_t step, int64_t batch_number);
  std::map<std::string, double> cpu_stats();

  DeviceStatsMonitorOptions options_;
  /// /proc/stat's busy and total jiffies at the last reading.
  uint64_t last_busy_ = 0;
  uint64_t last_total_ = 0;
  /// The step of the batch running: its end logs with the same step as its start.
  int64_t batch_step_ = 0;
};

}  // namespace fulgur
