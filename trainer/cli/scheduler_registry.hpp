#pragma once

#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/trainer/cli/class_registry.hpp>

#include <functional>
#include <memory>

namespace fulgur::cli {

/// What an `lr_scheduler:` entry builds on fit's optimizer.
struct SchedulerRecipe {
  std::function<LRSchedulerConfig(torch::optim::Optimizer& optimizer)> make;
};

/// LightningCLI's `lr_scheduler:` section over LibTorch's schedulers:
///
///   lr_scheduler:
///     class_path: ReduceLROnPlateau   # --lr_scheduler ReduceLROnPlateau
///     init_args: {monitor: val_loss, patience: 2}   # --lr_scheduler.monitor val_loss
///
/// StepLR (step_size, gamma) and ReduceLROnPlateau (monitor, mode, factor,
/// patience, threshold, threshold_mode, cooldown, min_lr, eps, strict), each
/// also with `interval` (epoch or step) and `frequency`, Lightning's
/// scheduler-config keys.
class SchedulerRegistry : public ClassRegistry<SchedulerRecipe> {
 public:
  SchedulerRegistry() : ClassRegistry("lr_scheduler") {}
  static SchedulerRegistry with_builtins();
};

}  // namespace fulgur::cli
