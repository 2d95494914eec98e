#include <fulgur/modules/lightning_module.hpp>

#include <fulgur/modules/metrics/metric_collection.hpp>

#include <fmt/format.h>

#include <atomic>
#include <iostream>
#include <set>
#include <stdexcept>

namespace fulgur {

void LightningModule::validation_step(const Batch&, int64_t) {}

void LightningModule::test_step(const Batch&, int64_t) {}

StepOutput LightningModule::validation_step(const Batch& batch, int64_t batch_idx, int64_t) {
  validation_step(batch, batch_idx);
  return {};
}

torch::Tensor LightningModule::predict_step(const Batch& batch, int64_t batch_idx, int64_t) {
  return predict_step(batch, batch_idx);
}

StepOutput LightningModule::test_step(const Batch& batch, int64_t batch_idx, int64_t) {
  test_step(batch, batch_idx);
  return {};
}

torch::Tensor LightningModule::predict_step(const Batch&, int64_t) {
  throw std::logic_error("[LightningModule::predict_step] not implemented: override predict_step to use predict()");
}

namespace {

/// Outside any run log() is a no-op, as Lightning's: a model used in an own
/// loop or a test keeps working. Said once per process, not per call.
bool logged_outside_run(const std::string& name) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    std::cerr << fmt::format(
                     "fulgur: warning: [LightningModule::log] '{}' was logged outside a Trainer or Fabric run and is "
                     "dropped (said once)",
                     name)
              << std::endl;
  }
  return true;
}

}  // namespace

void LightningModule::log(const std::string& name, const torch::Tensor& value, const LogOptions& options) {
  if (results_ == nullptr && logged_outside_run(name)) return;
  results_->log(name, value, options);
}

void LightningModule::log(const std::string& name, double value, const LogOptions& options) {
  log(name, torch::tensor(value, torch::kFloat64), options);
}

void LightningModule::log(const std::string& name, metrics::Metric& metric, const LogOptions& options) {
  if (results_ == nullptr && logged_outside_run(name)) return;
  metric.set_runtime(runtime_);
  results_->log(name, metric, options);
}

void LightningModule::log_dict(metrics::MetricCollection& collection, const LogOptions& options) {
  for (const auto& [name, metric] : collection.items()) log(name, *metric, options);
}

void LightningModule::attach_runtime(ModuleRuntime* runtime) {
  runtime_ = runtime;
  for (const auto& child : modules(/*include_self=*/false)) {
    if (auto* metric = dynamic_cast<metrics::Metric*>(child.get())) metric->set_runtime(runtime);
  }
}

Trainer* LightningModule::trainer() const { return runtime_ != nullptr ? runtime_->trainer() : nullptr; }

ModuleRuntime& LightningModule::runtime(const char* method) const {
  if (runtime_ == nullptr) {
    throw std::logic_error(
        fmt::format("[LightningModule::{}] called outside a Trainer run (use it inside steps and hooks)", method));
  }
  return *runtime_;
}

std::vector<std::shared_ptr<LightningOptimizer>> LightningModule::optimizers() const {
  return runtime("optimizers").optimizers();
}

std::vector<std::shared_ptr<torch::optim::LRScheduler>> LightningModule::lr_schedulers() const {
  return runtime("lr_schedulers").lr_schedulers();
}

void LightningModule::manual_backward(const torch::Tensor& loss) { runtime("manual_backward").manual_backward(loss); }

void LightningModule::toggle_optimizer(size_t index) {
  const auto all = optimizers();
  if (index >= all.size()) {
    throw std::out_of_range(
        fmt::format("[LightningModule::toggle_optimizer] optimizer {} does not exist; there are {}", index, all.size()));
  }
  std::set<const void*> mine;
  for (auto& group : all[index]->param_groups()) {
    for (auto& p : group.params()) mine.insert(p.unsafeGetTensorImpl());
  }
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == index) continue;
    for (auto& group : all[i]->param_groups()) {
      for (auto& p : group.params()) {
        if (mine.count(p.unsafeGetTensorImpl()) != 0) continue;
        toggled_.emplace_back(p, p.requires_grad());
        p.requires_grad_(false);
      }
    }
  }
}

void LightningModule::untoggle_optimizer(size_t /*index*/) {
  for (auto& [p, requires_grad] : toggled_) p.requires_grad_(requires_grad);
  toggled_.clear();
}

void LightningModule::clip_gradients(LightningOptimizer& optimizer, double value, ClipAlgorithm algorithm) {
  runtime("clip_gradients").clip_gradients(optimizer.optimizer(), value, algorithm);
}

torch::Device LightningModule::device() const {
  if (runtime_ != nullptr) return runtime_->device();
  const auto params = parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

int64_t LightningModule::global_rank() const { return runtime_ != nullptr ? runtime_->global_rank() : 0; }

int64_t LightningModule::world_size() const { return runtime_ != nullptr ? runtime_->world_size() : 1; }

torch::Tensor LightningModule::all_gather(const torch::Tensor& tensor) {
  return runtime_ != nullptr ? runtime_->all_gather(tensor) : tensor.detach().unsqueeze(0).clone();
}

torch::Tensor LightningModule::all_reduce(const torch::Tensor& tensor, ReduceOp op) {
  return runtime_ != nullptr ? runtime_->all_reduce(tensor, op) : tensor.detach().clone();
}

}  // namespace fulgur
