#pragma once

#include <stdexcept>
#include <string>

namespace fulgur {

/// A call on an OnlineTrainer whose training stopped on a signal (SIGTERM,
/// SIGINT, SIGUSR1) and saved its checkpoint: the program should exit with
/// 128 + signal() and resume when restarted. The C API returns FULGUR_STOPPED.
class StoppedError : public std::runtime_error {
 public:
  StoppedError(int signal, const std::string& message) : std::runtime_error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace fulgur
