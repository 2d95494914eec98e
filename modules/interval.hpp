#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// After every optimizer step, or at the end of every training epoch: when a
/// learning-rate scheduler steps (LRSchedulerConfig), LearningRateMonitor
/// logs and Timer checks the time.
enum class Interval { Step, Epoch };

inline std::vector<std::string> option_choices(Interval) { return {"step", "epoch"}; }

}  // namespace fulgur
