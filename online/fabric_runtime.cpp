#include <fulgur/online/fabric_runtime.hpp>

#include <fulgur/online/fabric.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

torch::Device FabricRuntime::device() const { return fabric_.device(); }

int64_t FabricRuntime::global_rank() const { return fabric_.global_rank(); }

int64_t FabricRuntime::world_size() const { return fabric_.world_size(); }

torch::Tensor FabricRuntime::all_reduce(const torch::Tensor& tensor, ReduceOp op) { return fabric_.all_reduce(tensor, op); }

torch::Tensor FabricRuntime::all_gather(const torch::Tensor& tensor) { return fabric_.strategy().all_gather(tensor); }

std::vector<std::shared_ptr<LightningOptimizer>> FabricRuntime::optimizers() { return fabric_.lightning_optimizers_; }

std::vector<std::shared_ptr<torch::optim::LRScheduler>> FabricRuntime::lr_schedulers() {
  std::vector<std::shared_ptr<torch::optim::LRScheduler>> out;
  for (const auto& entry : fabric_.optimizers_) {
    if (entry.lr_scheduler && entry.lr_scheduler->scheduler) out.push_back(entry.lr_scheduler->scheduler);
  }
  return out;
}

void FabricRuntime::manual_backward(const torch::Tensor& loss) {
  StepEngine::manual_backward(fabric_.strategy(), *this, fabric_.module(), loss);
}

void FabricRuntime::before_backward(const torch::Tensor& loss) { fabric_.module().on_before_backward(loss); }

void FabricRuntime::after_backward() { fabric_.module().on_after_backward(); }

void FabricRuntime::before_optimizer_step(torch::optim::Optimizer& optimizer) {
  fabric_.module().on_before_optimizer_step(optimizer);
}

void FabricRuntime::optimizer_step(size_t index) { fabric_.optimizer_step(index); }

void FabricRuntime::clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  fabric_.strategy().clip_gradients(optimizer, value, algorithm);
}

void FabricRuntime::log(const std::string& name, const torch::Tensor& value, const LogOptions& options) {
  torch::Tensor v = value.detach().to(torch::kFloat64);
  if (options.sync_dist && world_size() > 1) v = fabric_.all_reduce(v, ReduceOp::Mean);
  logged_[name] = v.item<double>();
}

void FabricRuntime::log(const std::string& name, metrics::Metric&, const LogOptions&) {
  throw std::logic_error(fmt::format(
      "[Fabric] '{}': logging a Metric object needs the Trainer's epochs; log its compute() as a value instead", name));
}

std::map<std::string, double> FabricRuntime::take_logged() {
  std::map<std::string, double> out;
  out.swap(logged_);
  return out;
}

}  // namespace fulgur
