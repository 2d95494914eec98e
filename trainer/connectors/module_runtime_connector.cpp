#include <fulgur/trainer/connectors/module_runtime_connector.hpp>

#include <fulgur/trainer/trainer.hpp>
#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
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

int64_t ModuleRuntimeConnector::world_size() const { return context_.strategy().world_size(); }

torch::Tensor ModuleRuntimeConnector::all_reduce(const torch::Tensor& tensor, ReduceOp op) {
  if (world_size() == 1) return tensor.detach().clone();
  return context_.strategy().all_reduce(tensor, op);
}

torch::Tensor ModuleRuntimeConnector::all_gather(const torch::Tensor& tensor) {
  return context_.strategy().all_gather(tensor);
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
  LightningModule& module = context_.module();
  if (module.automatic_optimization()) {
    throw std::logic_error(
        "[LightningModule::manual_backward] is for manual optimization: call automatic_optimization(false) in the "
        "module's constructor, or return the loss from training_step and let the Trainer run backward");
  }
  Strategy& strategy = context_.strategy();
  context_.hooks().call_hook("on_before_backward", &Callback::on_before_backward,
                             &LightningModule::on_before_backward, loss);
  strategy.backward(loss);
  // Every rank runs the same steps, so every rank averages the same set.
  std::vector<torch::Tensor> params;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad() && p.grad().defined()) params.push_back(p);
  }
  strategy.average_gradients(params);
  context_.hooks().call_hook("on_after_backward", &Callback::on_after_backward, &LightningModule::on_after_backward);
}

void ModuleRuntimeConnector::optimizer_step(size_t index) {
  if (index >= configs_.size()) {
    throw std::out_of_range(fmt::format("[LightningOptimizer::step] optimizer {} is not part of the running fit", index));
  }
  torch::optim::Optimizer& optimizer = *configs_[index].optimizer;
  Strategy& strategy = context_.strategy();
  strategy.prepare_optimizer_step(optimizer);  // as the automatic loop's step: no call back from the strategy
  context_.hooks().call_hook("on_before_optimizer_step", &Callback::on_before_optimizer_step,
                             &LightningModule::on_before_optimizer_step, optimizer);
  strategy.finish_optimizer_step(optimizer);
  context_.count_optimizer_step();  // the same call as the automatic loop's
}

void ModuleRuntimeConnector::clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) {
  context_.strategy().clip_gradients(optimizer, value, algorithm);
}

}  // namespace fulgur
