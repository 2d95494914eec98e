#include <fulgur/core/ignored_signal.hpp>

#include <csignal>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

struct Held {
  int holders = 0;
  bool changed = false;  // the first holder found the default and ignored it
  struct sigaction found {};
};

std::mutex g_ignored_mutex;
std::map<int, Held> g_ignored;  // by signal number

}  // namespace

IgnoredSignal::IgnoredSignal(int signal) : signal_(signal) {
  if (signal <= 0 || signal >= NSIG || signal == SIGKILL || signal == SIGSTOP) {
    throw std::invalid_argument("[IgnoredSignal] signal " + std::to_string(signal) + " cannot be ignored");
  }
  const std::lock_guard lock(g_ignored_mutex);
  Held& held = g_ignored[signal];
  if (held.holders++ > 0) return;
  held.changed = false;
  if (::sigaction(signal, nullptr, &held.found) != 0) return;
  if ((held.found.sa_flags & SA_SIGINFO) == 0 && held.found.sa_handler == SIG_DFL) {
    struct sigaction ignore = held.found;
    ignore.sa_handler = SIG_IGN;
    held.changed = ::sigaction(signal, &ignore, nullptr) == 0;
  }
}

IgnoredSignal::~IgnoredSignal() {
  const std::lock_guard lock(g_ignored_mutex);
  Held& held = g_ignored[signal_];
  if (--held.holders > 0 || !held.changed) return;
  ::sigaction(signal_, &held.found, nullptr);
  held.changed = false;
}

}  // namespace fulgur
