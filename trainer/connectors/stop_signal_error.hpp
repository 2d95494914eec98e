#pragma once

#include <stdexcept>
#include <string>

namespace fulgur {

/// What fit throws when a SIGTERM or SIGINT could not be acted on at a step
/// boundary (Lightning's SIGTERMException): a rank held in a collective by a
/// stopped or dead peer past the grace period (the Trainer then aborted the
/// process group and ended the ranks it started), or a run that failed while
/// the signal waited (a peer that ended on it broke a collective). The
/// program decides what follows; the command line returns exit_code().
class StopSignalError : public std::runtime_error {
 public:
  StopSignalError(int signal, const std::string& message) : std::runtime_error(message), signal_(signal) {}
  int signal() const { return signal_; }
  /// 128 + signal: what a scheduler reads as "stopped by the signal".
  int exit_code() const { return 128 + signal_; }

 private:
  int signal_;
};

}  // namespace fulgur
