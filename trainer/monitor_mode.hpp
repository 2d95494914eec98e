#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// Whether a monitored metric is better lower (Min) or higher (Max): the
/// `mode` of ModelCheckpoint and EarlyStopping.
enum class MonitorMode { Min, Max };

inline std::vector<std::string> option_choices(MonitorMode) { return {"min", "max"}; }

}  // namespace fulgur
