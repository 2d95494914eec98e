#include <fulgur/core/stop_signals.hpp>

#include <atomic>
#include <mutex>

namespace fulgur {
namespace {

// What a signal handler writes must have static storage, so the recorded
// signal lives here; the rest sits beside it because the last holder, not
// the first, puts the program's handlers back.
std::atomic<int> g_signal{0};
std::atomic<int> g_unacted{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

constexpr int kSignals[] = {SIGUSR1, SIGTERM, SIGINT};
struct sigaction g_program[3];  // the program's handlers, saved by the first holder
std::atomic<int> g_signal_holders{0};
std::mutex g_signals_mutex;  // orders installing and restoring; never taken by the handler

extern "C" void record_stop_signal(int signal) {
  int seen = g_signal.load();
  while (StopSignals::strength(signal) > StopSignals::strength(seen) && !g_signal.compare_exchange_weak(seen, signal)) {
  }
  if (signal != SIGUSR1) g_unacted.fetch_add(1);
}

void restore_program_handlers() {
  for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_program[i], nullptr);
}

}  // namespace

StopSignals::StopSignals() {
  const std::lock_guard lock(g_signals_mutex);
  if (g_signal_holders.load() == 0) {
    g_signal.store(0);
    g_unacted.store(0);
    struct sigaction recorder {};
    recorder.sa_handler = record_stop_signal;
    sigemptyset(&recorder.sa_mask);
    recorder.sa_flags = SA_RESTART;
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &recorder, &g_program[i]);
    first_ = true;
  }
  g_signal_holders.fetch_add(1);
}

StopSignals::~StopSignals() {
  int pass_on = 0;
  {
    const std::lock_guard lock(g_signals_mutex);
    if (g_signal_holders.fetch_sub(1) != 1) return;
    restore_program_handlers();
    if (g_unacted.load() > 0) pass_on = g_signal.load() == SIGINT ? SIGINT : SIGTERM;
    g_signal.store(0);
    g_unacted.store(0);
  }
  // Nothing acted on it: the program's own handler (or the default action) gets it.
  if (pass_on != 0) std::raise(pass_on);
}

int StopSignals::received() { return g_signal.load(); }

int StopSignals::take() {
  g_unacted.store(0);
  return g_signal.exchange(0);
}

int StopSignals::unacted() { return g_unacted.load(); }

void StopSignals::mark_acted() { g_unacted.store(0); }

void StopSignals::clear() {
  g_signal.store(0);
  g_unacted.store(0);
}

void StopSignals::restore_in_child() {
  if (g_signal_holders.load() > 0) restore_program_handlers();
}

int StopSignals::strength(int signal) {
  switch (signal) {
    case SIGTERM: return 3;
    case SIGINT: return 2;
    case SIGUSR1: return 1;
    default: return 0;
  }
}

const char* StopSignals::name(int signal) {
  if (signal == SIGUSR1) return "SIGUSR1";
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "another signal";
}

}  // namespace fulgur
