#include <fulgur/online/stop_signal_flag.hpp>

namespace fulgur {

namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) { received = signal; }

}  // namespace

StopSignalFlag::StopSignalFlag() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGUSR1, &action, &previous_usr1_);
}

StopSignalFlag::~StopSignalFlag() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGUSR1, &previous_usr1_, nullptr);
}

int StopSignalFlag::signal() const { return received; }

}  // namespace fulgur
