#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace fulgur {

/// The one-line reason of an error: c10::Error::what() carries a C++
/// backtrace, which users reading a data error do not want.
inline std::string error_reason(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) return torch_error->what_without_backtrace();
  return error.what();
}

}  // namespace fulgur
