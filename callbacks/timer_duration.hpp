#pragma once

#include <fmt/format.h>

#include <string>

namespace fulgur {

/// Timer's duration in seconds. A type of its own rather than a double so
/// the YAML reader (trainer/cli/callback_registry.hpp) can also accept
/// Lightning's "DD:HH:MM:SS" and {days, hours, minutes, seconds}; in C++ it
/// converts to and from seconds.
class TimerDuration {
 public:
  TimerDuration(double seconds = 0.0) : seconds_(seconds) {}  // NOLINT(google-explicit-constructor)
  operator double() const { return seconds_; }                 // NOLINT(google-explicit-constructor)
  double seconds() const { return seconds_; }
  /// Seconds, as messages and option tables show them.
  std::string to_string() const { return fmt::format("{}", seconds_); }

 private:
  double seconds_;
};

}  // namespace fulgur
