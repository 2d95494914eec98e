#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// The profilers option `profiler` names (unset: none): SimpleProfiler and
/// PyTorchProfiler.
enum class ProfilerKind { Simple, PyTorch };

inline std::vector<std::string> option_choices(ProfilerKind) { return {"simple", "pytorch"}; }

}  // namespace fulgur
