#pragma once

#include <fulgur/modules/interval.hpp>

#include <torch/optim.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// A learning-rate scheduler and when it steps (Lightning's lr_scheduler
/// dict). Set one of `scheduler` (any torch::optim::LRScheduler, your own
/// subclass included) or `plateau` (LibTorch's ReduceLROnPlateauScheduler,
/// which steps with the value of the metric `monitor` names):
///
///   auto plateau = std::make_shared<torch::optim::ReduceLROnPlateauScheduler>(*sgd);
///   return {sgd, fulgur::LRSchedulerConfig{.plateau = plateau, .monitor = "val_loss"}};
struct LRSchedulerConfig {
  std::shared_ptr<torch::optim::LRScheduler> scheduler;
  Interval interval = Interval::Epoch;
  /// Step the scheduler once every `frequency` intervals.
  int64_t frequency = 1;
  /// Stepped with callback_metrics()[monitor] (rank 0's value on every rank).
  std::shared_ptr<torch::optim::ReduceLROnPlateauScheduler> plateau;
  /// The metric a plateau scheduler watches, as logged (e.g. "val_loss").
  std::string monitor;
  /// A missing monitored metric is an error; false: a warning, and no step.
  bool strict = true;
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
