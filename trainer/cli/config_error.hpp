#pragma once

#include <stdexcept>
#include <string>

namespace fulgur::cli {

/// A bad option: unknown key, wrong type or invalid value. The command line
/// turns it into one message and exit code 2, before anything is written.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace fulgur::cli
