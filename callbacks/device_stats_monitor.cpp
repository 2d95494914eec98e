#include <fulgur/callbacks/device_stats_monitor.hpp>

#include <fulgur/strategies/cuda/cuda_device_stats.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fulgur {
namespace {

/// /proc/stat's first line: jiffies busy and in all, over every CPU.
std::pair<uint64_t, uint64_t> cpu_jiffies() {
  std::ifstream in("/proc/stat");
  std::string label;
  in >> label;
  if (label != "cpu") throw std::runtime_error("[DeviceStatsMonitor] cannot read /proc/stat");
  uint64_t value = 0, total = 0, idle = 0;
  for (int field = 0; field < 8 && in >> value; ++field) {  // user nice system idle iowait irq softirq steal
    total += value;
    if (field == 3 || field == 4) idle += value;
  }
  return {total - idle, total};
}

/// /proc/meminfo in kB by name.
std::map<std::string, double> meminfo() {
  std::ifstream in("/proc/meminfo");
  if (!in) throw std::runtime_error("[DeviceStatsMonitor] cannot read /proc/meminfo");
  std::map<std::string, double> values;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string name;
    double kb = 0;
    if (fields >> name >> kb && !name.empty()) values[name.substr(0, name.size() - 1)] = kb;
  }
  return values;
}

}  // namespace

DeviceStatsMonitor::DeviceStatsMonitor(DeviceStatsMonitorOptions options) : options_(std::move(options)) {
  options_.validate();
}

std::map<std::string, double> DeviceStatsMonitor::cpu_stats() {
  std::map<std::string, double> stats;
  const auto [busy, total] = cpu_jiffies();
  const uint64_t elapsed = total - last_total_;
  // As psutil.cpu_percent(): the busy share since the last reading.
  stats["cpu_percent"] = elapsed > 0 ? 100.0 * static_cast<double>(busy - last_busy_) / static_cast<double>(elapsed)
                                     : 0.0;
  last_busy_ = busy;
  last_total_ = total;
  const auto memory = meminfo();
  auto value = [&](const char* name) {
    const auto it = memory.find(name);
    return it == memory.end() ? 0.0 : it->second;
  };
  const double mem_total = value("MemTotal");
  stats["cpu_vm_percent"] = mem_total > 0 ? 100.0 * (mem_total - value("MemAvailable")) / mem_total : 0.0;
  const double swap_total = value("SwapTotal");
  stats["cpu_swap_percent"] = swap_total > 0 ? 100.0 * (swap_total - value("SwapFree")) / swap_total : 0.0;
  return stats;
}

std::map<std::string, double> DeviceStatsMonitor::device_stats(const torch::Device& device) {
  std::map<std::string, double> stats;
  if (device.is_cuda()) {
    const int index = device.has_index() ? device.index() : 0;
    stats = CudaDeviceStats::memory_stats(index);
    for (const auto& [key, value] : CudaDeviceStats::nvml_stats(index)) stats[key] = value;
    if (options_.cpu_stats().value_or(false)) {
      for (const auto& [key, value] : cpu_stats()) stats[key] = value;
    }
  } else if (options_.cpu_stats().value_or(true)) {
    stats = cpu_stats();
  }
  return stats;
}

void DeviceStatsMonitor::on_train_start(Trainer& trainer, LightningModule&) {
  if (trainer.loggers().empty()) {
    throw std::invalid_argument("[DeviceStatsMonitor] cannot log device stats: the Trainer has no logger");
  }
  std::tie(last_busy_, last_total_) = cpu_jiffies();
}

void DeviceStatsMonitor::log(Trainer& trainer, const std::string& hook, int64_t step, int64_t batch_number) {
  // As the steps' own metrics: every log_every_n_steps batches.
  if (!trainer.is_global_zero() || batch_number % trainer.config().options.log_every_n_steps() != 0) return;
  const auto stats = device_stats(trainer.strategy().root_device());
  if (stats.empty()) return;
  std::map<std::string, double> metrics;
  for (const auto& [key, value] : stats) metrics["DeviceStatsMonitor." + hook + "/" + key] = value;
  for (const auto& logger : trainer.loggers()) logger->log_metrics(metrics, step);
}

void DeviceStatsMonitor::on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) {
  batch_step_ = trainer.state().global_step();
  log(trainer, "on_train_batch_start", batch_step_, batch_step_ + 1);
}

void DeviceStatsMonitor::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&,
                                            int64_t) {
  log(trainer, "on_train_batch_end", batch_step_, batch_step_ + 1);
}

void DeviceStatsMonitor::on_validation_batch_start(Trainer& trainer, LightningModule&, const Batch&,
                                                   int64_t batch_idx) {
  if (!trainer.state().sanity_checking()) log(trainer, "on_validation_batch_start", trainer.state().global_step(), batch_idx + 1);
}

void DeviceStatsMonitor::on_validation_batch_end(Trainer& trainer, LightningModule&, const Batch&, int64_t batch_idx) {
  if (!trainer.state().sanity_checking()) log(trainer, "on_validation_batch_end", trainer.state().global_step(), batch_idx + 1);
}

void DeviceStatsMonitor::on_test_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t batch_idx) {
  log(trainer, "on_test_batch_start", trainer.state().global_step(), batch_idx + 1);
}

void DeviceStatsMonitor::on_test_batch_end(Trainer& trainer, LightningModule&, const Batch&, int64_t batch_idx) {
  log(trainer, "on_test_batch_end", trainer.state().global_step(), batch_idx + 1);
}

}  // namespace fulgur
