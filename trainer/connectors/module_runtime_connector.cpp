#include <fulgur/trainer/connectors/module_runtime_connector.hpp>

#include <fulgur/trainer/trainer.hpp>
#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/engine/step_engine.hpp>
#include <fulgur/trainer/optimizer_checks.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

ModuleRuntimeConnector::ModuleRuntimeConnector(Trainer& trainer, RunContext& context)
    : trainer_(trainer), context_(context) {}

void ModuleRuntimeConnector::set_optimizers(const OptimizerConfig& config) {
  clear_optimizers();
  std::vector<OptimizerConfig> entries = config.entries();
  const LightningModule& module = context_.module();
  check_optimizer_configs(entries, module.automatic_optimization(), !module.automatic_optimization(),
                          context_.config(), "[Trainer::fit]");
  for (size_t i = 0; i < entries.size(); ++i) {
    context_.strategy().setup_optimizers(*entries[i].optimizer);
    optimizers_.push_back(std::make_shared<LightningOptimizer>(entries[i].optimizer, i, this));
  }
  configs_ = std::move(entries);
}

void ModuleRuntimeConnector::check_manual_accumulation(int64_t accumulate_grad_batches) {
  fulgur::check_manual_accumulation(accumulate_grad_batches, "[Trainer::fit]");
}

void ModuleRuntimeConnector::clear_optimizers() {
  configs_.clear();
  optimizers_.clear();
}

torch::Device ModuleRuntimeConnector::device() const { return context_.strategy().root_device(); }

int64_t ModuleRuntimeConnector::global_rank() const { return context_.strategy().global_rank(); }

int64_t ModuleRuntimeConnector::world_size() const { return context_.strategy().data_parallel_size(); }

torch::Tensor ModuleRuntimeConnector::all_reduce(const torch::Tensor& tensor, ReduceOp op) {
  if (world_size() == 1) return tensor.detach().clone();
  return context_.strategy().all_reduce_data_parallel(tensor, op);
}

torch::Tensor ModuleRuntimeConnector::all_gather(const torch::Tensor& tensor) {
  return context_.strategy().all_gather_data_parallel(tensor);
}

std::vector<std::shared_ptr<LightningOptimizer>> ModuleRuntimeConnector::optimizers() {
  if (optimizers_.empty()) {
    throw std::logic_error("[LightningModule::optimizers] there are none: optimizers exist while fit() runs");
  }
  return optimizers_;
}

std::vector<std::shared_ptr<torch::optim::LRScheduler>> ModuleRuntimeConnector::lr_schedulers() {
  std::vector<std::shared_ptr<torch::optim::LRScheduler>> out;
  for (const auto& config : configs_) {
    if (config.lr_scheduler && config.lr_scheduler->scheduler) out.push_back(config.lr_scheduler->scheduler);
  }
  return out;
}

void ModuleRuntimeConnector::manual_backward(const torch::Tensor& loss) {
  StepEngine::manual_backward(context_.strategy(), context_.hooks(), context_.module(), loss);
}

void ModuleRuntimeConnector::optimizer_step(size_t index) {
  if (index >= configs_.size()) {
    throw std::out_of_range(fmt::format("[LightningOptimizer::step] optimizer {} is not part of the running fit", index));
  }
  // Manual optimization clips itself (clip_gradients) and zeroes and schedules its own.
  StepEngine::optimizer_step(context_.strategy(), context_.hooks(), *configs_[index].optimizer, std::nullopt);
  StepEngine::after_optimizer_step(
      configs_[index], /*zero_grad=*/false,
      context_.steps(), nullptr, nullptr);  // the same counter as the automatic loop's
}

void ModuleRuntimeConnector::clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  context_.strategy().clip_gradients(optimizer, value, algorithm);
}

}  // namespace fulgur
