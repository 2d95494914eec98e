#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/modules/pipeline_module.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/engine/step_counter.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// The one step path. The Trainer's training loop (automatic
/// optimization), manual optimization (LightningOptimizer::step and
/// manual_backward), Fabric and the online trainer on top of it all run
/// these, so a step means the same everywhere:
///
///   check_loss → backward (on_before_backward, the strategy's backward and
///   gradient synchronisation, on_after_backward) → optimizer_step (the
///   strategy synchronises and unscales, on_before_optimizer_step sees true
///   gradients, the strategy clips and steps) → after_optimizer_step
///   (zero_grad, the one step counter counts one, the step-interval
///   schedulers due now step: a ReduceLROnPlateau on its monitored value).
///
/// What differs between runners is only who hears the hooks (the Trainer's
/// callbacks and the module, or Fabric's module alone): Hooks.
class StepEngine {
 public:
  /// The hooks a step calls, in Lightning's order.
  class Hooks {
   public:
    virtual ~Hooks() = default;
    virtual void before_backward(const torch::Tensor& loss) = 0;
    virtual void after_backward() = 0;
    virtual void before_optimizer_step(torch::optim::Optimizer& optimizer) = 0;
  };

  /// training_step must return a scalar loss that requires grad: throws
  /// std::runtime_error "`who` training_step must return ... (`where`), got ...".
  static void check_loss(const torch::Tensor& loss, const std::string& who, const std::string& where);

  /// Backward through the strategy (precision scaling, gradient
  /// synchronisation) between the two backward hooks. `sync`: false inside
  /// an accumulation window (no gradient exchange yet).
  static void backward(Strategy& strategy, Hooks& hooks, const torch::Tensor& loss, bool sync = true);
  /// manual_backward: refused under automatic optimization (`module`); the
  /// gradients of every parameter that has one are averaged over the ranks
  /// after the strategy's backward.
  static void manual_backward(Strategy& strategy, Hooks& hooks, LightningModule& module, const torch::Tensor& loss);

  /// A pipeline's forward and backward (a PipelineModule on a pipeline):
  /// the schedule runs every micro-batch's passes (gradients scaled by
  /// `loss_scale`), the module logs the loss (log_loss "train"), and the
  /// backward hooks come after, around the gradients' average over the
  /// replicas (`sync`: the last batch of an accumulation window). Returns
  /// the batch's loss, the same on every stage.
  static torch::Tensor pipeline_forward_backward(Strategy& strategy, Hooks& hooks, PipelineModule& module,
                                                 const Batch& batch, double loss_scale, bool sync);

  /// Synchronise and unscale, the hook, clip and step. Returns whether the
  /// optimizer stepped (float16's scaler skips steps with inf/NaN gradients).
  static bool optimizer_step(Strategy& strategy, Hooks& hooks, torch::optim::Optimizer& optimizer,
                             const std::optional<Strategy::Clip>& clip);
  /// After a step of `entry`'s optimizer: zero_grad (`zero_grad`: automatic
  /// optimization and Fabric; manual optimization zeroes its own), `steps`
  /// counts one (the front end's one counter), `counted` (if any) runs with
  /// the new count (Fabric sends what the step logged), then `entry`'s
  /// step-interval scheduler when due, through `step_scheduler` (none:
  /// manual optimization steps its own schedulers). Returns the new count.
  static int64_t after_optimizer_step(const OptimizerConfig& entry, bool zero_grad, StepCounter& steps,
                                      const std::function<void(int64_t)>& counted,
                                      const std::function<void(const LRSchedulerConfig&)>& step_scheduler);
  /// Whether every gradient `module`'s parameters hold is finite: one read
  /// of each (their sums, summed: a NaN or Inf anywhere makes the total
  /// NaN or Inf) and one host read. What the online trainer asks before a
  /// step (OnlineOptions::on_nonfinite).
  static bool gradients_finite(const torch::nn::Module& module);
  /// One step of a scheduler config; a plateau's with rank 0's value of its
  /// monitor in `metrics` (every rank calls it, one broadcast). A monitor
  /// `metrics` lacks throws (strict; the message starts with `who`) or warns
  /// on rank 0 and skips the step.
  static void step_scheduler(const LRSchedulerConfig& config, Strategy& strategy,
                             const std::map<std::string, double>& metrics, const std::string& who);
};

}  // namespace fulgur
