#pragma once

#include <string>
#include <vector>

namespace fulgur {

/// "; did you mean 'X'?" naming the candidate closest to `key` (by edit
/// distance, at most 2 edits or a third of the key's length, and fewer than
/// its letters), else "":
/// what an unknown key or choice error appends, so a typo names its fix.
std::string did_you_mean(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace fulgur
