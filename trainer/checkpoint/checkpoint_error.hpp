#pragma once

#include <stdexcept>
#include <string>

namespace fulgur {

/// A checkpoint could not be written or read: the message names the file
/// and what was wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fulgur
