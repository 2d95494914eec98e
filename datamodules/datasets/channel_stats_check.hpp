#pragma once

#include <fulgur/core/option_checks.hpp>

#include <cmath>
#include <vector>

namespace fulgur::check {

/// The check of a mean or std option of an RGB data module: 3 finite
/// numbers, positive for std (it divides).
struct ChannelStats {
  bool positive = false;
  Result operator()(const std::vector<double>& values) const {
    bool ok = values.size() == 3;
    for (const double v : values) ok = ok && std::isfinite(v) && (!positive || v > 0);
    if (ok) return std::nullopt;
    return positive ? "must be a list of 3 positive numbers (one per RGB channel)"
                    : "must be a list of 3 numbers (one per RGB channel)";
  }
};

}  // namespace fulgur::check
