#pragma once

#include <fulgur/modules/optimizer_config.hpp>

#include <ATen/core/Dict.h>

namespace fulgur {

/// A scheduler's state in a checkpoint's "lr_schedulers" list, with
/// PyTorch's keys: "_step_count" and "_last_lr" for an LRScheduler;
/// "best", "num_bad_epochs", "cooldown_counter", "last_epoch" and
/// "_last_lr" for a ReduceLROnPlateauScheduler. `optimizer` gives _last_lr.
c10::impl::GenericDict scheduler_state_dict(const LRSchedulerConfig& config, torch::optim::Optimizer& optimizer);

/// Restores what scheduler_state_dict saved; throws CheckpointError naming
/// `source` and the key when a key of the scheduler's kind is missing.
void load_scheduler_state_dict(const LRSchedulerConfig& config, const c10::impl::GenericDict& state,
                               const std::string& source);

}  // namespace fulgur
