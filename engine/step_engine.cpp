#include <fulgur/engine/step_engine.hpp>

#include <fulgur/engine/monitored_metric.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <vector>

namespace fulgur {

void StepEngine::check_loss(const torch::Tensor& loss, const std::string& who, const std::string& where) {
  if (loss.defined() && loss.numel() == 1 && loss.requires_grad()) return;
  throw std::runtime_error(fmt::format(
      "{} training_step must return a scalar loss that requires grad ({}), got {}", who, where,
      !loss.defined() ? std::string("an undefined tensor")
                      : fmt::format("shape [{}] requires_grad={}", fmt::join(loss.sizes(), ","), loss.requires_grad())));
}

void StepEngine::backward(Strategy& strategy, Hooks& hooks, const torch::Tensor& loss, bool sync) {
  hooks.before_backward(loss);
  {
    std::optional<Strategy::NoSync> no_sync;  // inside an accumulation window
    if (!sync) no_sync.emplace(strategy);
    strategy.backward(loss);
  }
  hooks.after_backward();
}

void StepEngine::manual_backward(Strategy& strategy, Hooks& hooks, LightningModule& module, const torch::Tensor& loss) {
  if (module.automatic_optimization()) {
    throw std::logic_error(
        "[LightningModule::manual_backward] is for manual optimization: call automatic_optimization(false) in the "
        "module's constructor, or return the loss from training_step and let the Trainer run backward");
  }
  hooks.before_backward(loss);
  strategy.backward(loss);
  // Every rank runs the same steps, so every rank averages the same set.
  std::vector<torch::Tensor> params;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad() && p.grad().defined()) params.push_back(p);
  }
  strategy.average_gradients(params);
  hooks.after_backward();
}

torch::Tensor StepEngine::pipeline_forward_backward(Strategy& strategy, Hooks& hooks, PipelineModule& module,
                                                    const Batch& batch, double loss_scale, bool sync) {
  const torch::Tensor loss = module.pipeline()->train(batch, loss_scale);
  module.log_loss("train", loss);
  hooks.before_backward(loss);
  if (sync) {
    std::vector<torch::Tensor> params;
    for (const auto& p : module.parameters()) {
      if (p.requires_grad() && p.grad().defined()) params.push_back(p);
    }
    strategy.average_gradients(params);
  }
  hooks.after_backward();
  return loss;
}

bool StepEngine::optimizer_step(Strategy& strategy, Hooks& hooks, torch::optim::Optimizer& optimizer,
                                const std::optional<Strategy::Clip>& clip) {
  strategy.prepare_optimizer_step(optimizer);
  hooks.before_optimizer_step(optimizer);
  return strategy.finish_optimizer_step(optimizer, clip);
}

int64_t StepEngine::after_optimizer_step(const OptimizerConfig& entry, bool zero_grad, StepCounter& steps,
                                         const std::function<void(int64_t)>& counted,
                                         const std::function<void(const LRSchedulerConfig&)>& step_scheduler) {
  if (zero_grad) entry.optimizer->zero_grad();
  const int64_t step = steps.count();
  if (counted) counted(step);
  const auto& scheduler = entry.lr_scheduler;
  if (step_scheduler && scheduler && scheduler->interval == Interval::Step && step % scheduler->frequency == 0) {
    step_scheduler(*scheduler);
  }
  return step;
}

bool StepEngine::gradients_finite(const torch::nn::Module& module) {
  std::vector<torch::Tensor> sums;
  for (const auto& parameter : module.parameters()) {
    if (parameter.grad().defined()) sums.push_back(parameter.grad().sum());
  }
  if (sums.empty()) return true;
  return std::isfinite(torch::stack(sums).sum().item<double>());
}

void StepEngine::step_scheduler(const LRSchedulerConfig& config, Strategy& strategy,
                                const std::map<std::string, double>& metrics, const std::string& who) {
  if (!config.plateau) {
    config.scheduler->step();
    return;
  }
  // Rank 0's value steps every rank's scheduler, so their learning rates stay equal.
  const std::optional<double> value = monitored_value(strategy, metrics, config.monitor);
  if (!value) {
    const std::string message = missing_monitor_message(metrics, who + " ReduceLROnPlateau", config.monitor) +
                                ". Set the lr_scheduler config's monitor to one of them, or strict = false to skip the "
                                "step";
    if (config.strict) throw std::runtime_error(message);
    if (strategy.is_global_zero()) std::cerr << "fulgur: warning: " << message << std::endl;
    return;
  }
  config.plateau->step(static_cast<float>(*value));
}

}  // namespace fulgur
