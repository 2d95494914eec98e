#include <fulgur/trainer/optimizer_checks.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

void check_optimizer_configs(const std::vector<OptimizerConfig>& entries, bool automatic, bool manual,
                             const TrainerConfig& config, const std::string& who) {
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].optimizer) {
      throw std::invalid_argument(fmt::format("{} configure_optimizers returned no optimizer{}", who,
                                              entries.size() > 1 ? fmt::format(" at position {}", i) : ""));
    }
    if (!entries[i].lr_scheduler) continue;
    const LRSchedulerConfig& s = *entries[i].lr_scheduler;
    if (!s.scheduler && !s.plateau) throw std::invalid_argument(who + " lr_scheduler config has no scheduler");
    if (s.scheduler && s.plateau) {
      throw std::invalid_argument(who + " lr_scheduler config sets both scheduler and plateau; set one");
    }
    if (s.plateau && s.monitor.empty()) {
      throw std::invalid_argument(who +
                                  " a ReduceLROnPlateauScheduler needs the metric it watches: set the config's monitor "
                                  "(e.g. \"val_loss\")");
    }
    if (s.frequency < 1) {
      throw std::invalid_argument(fmt::format("{} lr_scheduler frequency must be >= 1, got {}", who, s.frequency));
    }
  }
  if (automatic && entries.size() > 1) {
    throw std::invalid_argument(fmt::format(
        "{} configure_optimizers returned {} optimizers, but automatic optimization steps one; "
        "with several optimizers use manual optimization: automatic_optimization(false) in the module's "
        "constructor, then manual_backward() and optimizers()[i]->step() in training_step",
        who, entries.size()));
  }
  if (manual) {
    check_manual_accumulation(config.options.accumulate_grad_batches(), who);
    if (const auto clip = config.gradient_clip()) {
      throw std::invalid_argument(fmt::format(
          "{} gradient_clip_val={} is not supported with manual optimization; "
          "call clip_gradients(optimizer, value) in training_step",
          who, clip->value));
    }
  }
}

void check_manual_accumulation(int64_t accumulate_grad_batches, const std::string& who) {
  if (accumulate_grad_batches == 1) return;
  throw std::invalid_argument(fmt::format(
      "{} accumulate_grad_batches={} is not supported with manual optimization; "
      "accumulate in training_step (step the optimizer every N batches)",
      who, accumulate_grad_batches));
}

}  // namespace fulgur
