#pragma once

#include <torch/optim.h>

#include <cstdint>
#include <memory>
#include <optional>

namespace fulgur {

/// When a learning-rate scheduler steps: after every optimizer step, or at
/// the end of every training epoch.
enum class SchedulerInterval { Step, Epoch };

struct LRSchedulerConfig {
  std::shared_ptr<torch::optim::LRScheduler> scheduler;
  SchedulerInterval interval = SchedulerInterval::Epoch;
  /// Step the scheduler once every `frequency` intervals.
  int64_t frequency = 1;
};

/// What configure_optimizers() returns: one optimizer and optionally one
/// scheduler built on it. The scheduler keeps a reference to the optimizer,
/// so both live in this object (and in the Trainer while it runs).
struct OptimizerConfig {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::optional<LRSchedulerConfig> lr_scheduler;
};

}  // namespace fulgur
