#pragma once

#include <string>
#include <vector>

namespace fulgur::cli {

/// "; did you mean 'X'?" naming the candidate closest to `key` (by edit
/// distance, at most 2 edits or a third of the key's length), else "": what
/// an unknown-key error appends, so a typo names its fix.
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace fulgur::cli
