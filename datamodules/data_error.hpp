#pragma once

#include <stdexcept>

namespace fulgur {

/// Bad input data rather than a bad program: a missing folder, an empty
/// class folder, a missing, truncated or corrupt image. It is its own type
/// so the command line can report it as bad input (exit code 2), and it
/// stays a std::runtime_error for code that only knows the standard types.
/// Loader threads rethrow it unchanged in the consumer thread.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fulgur
