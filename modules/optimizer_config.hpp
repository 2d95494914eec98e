#pragma once

#include <torch/optim.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

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
/// scheduler built on it, or, for manual optimization, several such pairs
/// made with list(). The scheduler keeps a reference to its optimizer, so
/// both live in this object (and in the Trainer while it runs).
///
///   return {sgd, std::nullopt};                                  // one
///   return fulgur::OptimizerConfig::list({{opt_g}, {opt_d}});    // several (a GAN)
struct OptimizerConfig {
  std::shared_ptr<torch::optim::Optimizer> optimizer;
  std::optional<LRSchedulerConfig> lr_scheduler;
  /// The optimizers after this one, in order (filled by list()).
  std::vector<OptimizerConfig> more;

  /// Several optimizers, each with its own optional scheduler: the module's
  /// optimizers()[i] and lr_schedulers() follow this order.
  static OptimizerConfig list(std::vector<OptimizerConfig> configs);
  /// This one and `more`, flattened in order (each entry's `more` empty).
  std::vector<OptimizerConfig> entries() const;
};

inline OptimizerConfig OptimizerConfig::list(std::vector<OptimizerConfig> configs) {
  if (configs.empty()) return {};
  OptimizerConfig head = std::move(configs.front());
  for (size_t i = 1; i < configs.size(); ++i) {
    for (auto& entry : configs[i].entries()) head.more.push_back(std::move(entry));
  }
  return head;
}

inline std::vector<OptimizerConfig> OptimizerConfig::entries() const {
  std::vector<OptimizerConfig> out{{optimizer, lr_scheduler, {}}};
  for (const auto& next : more) {
    for (auto& entry : next.entries()) out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace fulgur
