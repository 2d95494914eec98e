#pragma once

#include <string>

namespace fulgur::detail {

/// The first line of `text`: an error's message without the backtrace that
/// LibTorch's errors carry after it.
inline std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace fulgur::detail
