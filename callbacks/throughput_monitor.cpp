#include <fulgur/callbacks/throughput_monitor.hpp>

#include <fulgur/strategies/cuda/cuda_device_stats.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <torch/cuda.h>

#include <array>

namespace fulgur {
namespace {

/// Dense peak FLOP/s (no sparsity) from NVIDIA's data sheets: fp32, and
/// bf16/fp16 on the tensor cores. Matched by a part of the device's name.
struct Peak {
  const char* name_part;
  double fp32;
  double half;
};
constexpr std::array<Peak, 9> kPeaks{{
    {"H200", 67e12, 989.4e12},
    {"H100 PCIe", 51e12, 756e12},
    {"H100", 67e12, 989.4e12},  // SXM; after the PCIe card so that it matches first
    {"A100", 19.5e12, 312e12},
    {"L40S", 91.6e12, 362.05e12},
    {"L4", 30.3e12, 121e12},
    {"A10G", 31.2e12, 70e12},
    {"V100", 15.7e12, 125e12},
    {"T4", 8.1e12, 65e12},
}};

}  // namespace

ThroughputMonitor::ThroughputMonitor(ThroughputMonitorOptions options) : options_(std::move(options)) {
  options_.validate();
}

std::optional<double> ThroughputMonitor::peak_flops(const std::string& device_name, PrecisionMode precision) {
  const bool half = precision != PrecisionMode::Full32;
  for (const Peak& peak : kPeaks) {
    if (device_name.find(peak.name_part) != std::string::npos) return half ? peak.half : peak.fp32;
  }
  return std::nullopt;
}

void ThroughputMonitor::start(Trainer& trainer, const std::string& stage) {
  Meter& meter = meters_[stage];
  meter.window.clear();
  meter.batches = meter.samples = 0;
  world_size_ = trainer.world_size();
  const torch::Device device = trainer.strategy().root_device();
  synchronize_cuda_ = device.is_cuda();
  available_flops_ = options_.available_flops();
  if (!available_flops_ && device.is_cuda()) {
    if (const auto name = CudaDeviceStats::name(device.index())) {
      available_flops_ = peak_flops(*name, trainer.config().precision);
    }
  }
  meter.t0 = Clock::now();
}

void ThroughputMonitor::update(Trainer& trainer, LightningModule& module, const std::string& stage,
                               const Batch& batch) {
  // The GPU works asynchronously: the time is right only once it finished.
  if (synchronize_cuda_) torch::cuda::synchronize(trainer.strategy().root_device().index());
  Meter& meter = meters_[stage];
  meter.batches += 1;
  meter.total_batches += 1;
  meter.samples += batch.size();
  meter.window.push_back({std::chrono::duration<double>(Clock::now() - meter.t0).count(), meter.batches,
                          meter.samples, module.flops_per_batch()});
  if (static_cast<int64_t>(meter.window.size()) > options_.window_size()) meter.window.pop_front();
}

void ThroughputMonitor::log(Trainer& trainer, const std::string& stage, int64_t step) const {
  std::map<std::string, double> metrics;
  for (const auto& [key, value] : compute(stage)) metrics[stage + options_.separator() + key] = value;
  for (const auto& logger : trainer.loggers()) logger->log_metrics(metrics, step);
}

void ThroughputMonitor::on_train_start(Trainer& trainer, LightningModule&) { start(trainer, "train"); }

void ThroughputMonitor::on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor&,
                                           const Batch& batch, int64_t batch_idx) {
  if (!trainer.is_global_zero()) return;
  update(trainer, module, "train", batch);
  // Log when an optimizer step just ended (not inside an accumulation window), every log_every_n_steps.
  const bool stepped = (batch_idx + 1) % trainer.state().accumulate_grad_batches() == 0 ||
                       batch_idx + 1 == trainer.state().num_training_batches();
  if (!stepped || trainer.state().global_step() % trainer.config().options.log_every_n_steps() != 0) return;
  log(trainer, "train", trainer.state().global_step());
}

void ThroughputMonitor::on_validation_start(Trainer& trainer, LightningModule&) {
  if (trainer.state().sanity_checking()) return;
  validation_started_ = Clock::now();
  start(trainer, "validate");
}

void ThroughputMonitor::on_validation_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch,
                                                int64_t) {
  if (trainer.state().sanity_checking() || !trainer.is_global_zero()) return;
  update(trainer, module, "validate", batch);
  const int64_t step = meters_["validate"].total_batches;
  if (step % trainer.config().options.log_every_n_steps() == 0) log(trainer, "validate", step);
}

void ThroughputMonitor::on_validation_end(Trainer& trainer, LightningModule&) {
  // Validation inside fit does not count as training time.
  if (!trainer.state().sanity_checking() && trainer.state().stage() == Stage::Fit) {
    meters_["train"].t0 += Clock::now() - validation_started_;
  }
}

void ThroughputMonitor::on_test_start(Trainer& trainer, LightningModule&) { start(trainer, "test"); }

void ThroughputMonitor::on_test_batch_end(Trainer& trainer, LightningModule& module, const Batch& batch, int64_t) {
  if (!trainer.is_global_zero()) return;
  update(trainer, module, "test", batch);
  const int64_t step = meters_["test"].total_batches;
  if (step % trainer.config().options.log_every_n_steps() == 0) log(trainer, "test", step);
}

std::map<std::string, double> ThroughputMonitor::compute(const std::string& stage) const {
  std::map<std::string, double> m;
  const auto found = meters_.find(stage);
  if (found == meters_.end() || found->second.window.empty()) return m;
  const std::deque<Sample>& window = found->second.window;
  const std::string& sep = options_.separator();
  const Sample& last = window.back();
  m["time"] = last.time;
  m["batches"] = static_cast<double>(last.batches);
  m["samples"] = static_cast<double>(last.samples);
  if (static_cast<int64_t>(window.size()) < options_.window_size()) return m;
  // Rates over the window: from the first sample's end to the last's.
  const Sample& first = window.front();
  const double elapsed = last.time - first.time;
  if (elapsed <= 0) return m;
  const double world = static_cast<double>(world_size_);
  const double batches_per_sec = static_cast<double>(last.batches - first.batches) / elapsed;
  const double samples_per_sec = static_cast<double>(last.samples - first.samples) / elapsed;
  m["device" + sep + "batches_per_sec"] = batches_per_sec;
  m["device" + sep + "samples_per_sec"] = samples_per_sec;
  if (world_size_ > 1) {
    m["batches_per_sec"] = batches_per_sec * world;
    m["samples_per_sec"] = samples_per_sec * world;
  }
  // FLOPs of the batches after the first, over the same time.
  double flops = 0.0;
  for (size_t i = 1; i < window.size(); ++i) {
    if (!window[i].flops) return m;
    flops += *window[i].flops;
  }
  const double device_flops_per_sec = flops / elapsed;
  m["device" + sep + "flops_per_sec"] = device_flops_per_sec;
  if (world_size_ > 1) m["flops_per_sec"] = device_flops_per_sec * world;
  if (available_flops_) m["device" + sep + "mfu"] = device_flops_per_sec / *available_flops_;
  return m;
}

}  // namespace fulgur
