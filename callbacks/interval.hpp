#pragma once

#include <fulgur/modules/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// When a callback acts: after optimizer steps or at epoch ends (the
/// `logging_interval` of LearningRateMonitor, the `interval` of Timer).
enum class Interval { Step, Epoch };

inline std::vector<std::string> option_choices(Interval) { return {"step", "epoch"}; }

}  // namespace fulgur
