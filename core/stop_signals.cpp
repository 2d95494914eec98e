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

/// The program handles `i`'s signal with a function of its own (not the
/// default action, not ignored).
bool program_handles(int i) {
  const struct sigaction& program = g_program[i];
  if ((program.sa_flags & SA_SIGINFO) != 0) return program.sa_sigaction != nullptr;
  return program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN && program.sa_handler != nullptr;
}

int index_of(int signal) {
  for (int i = 0; i < 3; ++i) {
    if (kSignals[i] == signal) return i;
  }
  return -1;
}

extern "C" void record_stop_signal(int signal, siginfo_t* info, void* context) {
  int seen = g_signal.load();
  while (StopSignals::strength(signal) > StopSignals::strength(seen) && !g_signal.compare_exchange_weak(seen, signal)) {
  }
  if (signal != SIGUSR1) g_unacted.fetch_add(1);
  // The program's own handler hears it too, as Lightning's signal connector calls one it finds.
  const int i = index_of(signal);
  if (i < 0 || !program_handles(i)) return;
  const struct sigaction& program = g_program[i];
  if ((program.sa_flags & SA_SIGINFO) != 0) {
    program.sa_sigaction(signal, info, context);
  } else {
    program.sa_handler(signal);
  }
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
    recorder.sa_sigaction = record_stop_signal;
    sigemptyset(&recorder.sa_mask);
    recorder.sa_flags = SA_RESTART | SA_SIGINFO;
    // Also a signal the program ignores is a stop request while a run holds
    // them (as under Lightning): launchers and a shell's background jobs
    // ignore SIGUSR1 and SIGINT on the program's behalf. It is never passed on.
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
    // A program's own handler heard it when it came; the default action has not happened yet.
    if (pass_on != 0 && program_handles(index_of(pass_on))) pass_on = 0;
    g_signal.store(0);
    g_unacted.store(0);
  }
  // Nothing acted on it: the default action happens now.
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
