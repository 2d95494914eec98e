#pragma once

#include <stdexcept>
#include <string>

namespace fulgur {

class Strategy;

/// A checkpoint could not be written or read: the message names the file
/// and what was wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// After a write every rank takes part in: every rank learns whether any
/// failed (`error` not empty), and all throw CheckpointError, with their
/// own message or else `otherwise`.
void agree_on_failure(Strategy& strategy, std::string& error, const std::string& otherwise);

}  // namespace fulgur
