#include <fulgur/trainer/connectors/signal_connector.hpp>

#include <fulgur/strategies/sync/collective_wait.hpp>
#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>

#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

namespace fulgur {
namespace {

// A signal handler can only reach state with static storage; this is the one
// such variable, written by the handler and read by SignalConnector.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

// SIGTERMs and SIGINTs received that no step boundary has acted on yet.
std::atomic<int> g_unacted_stops{0};
static_assert(std::atomic<int>::is_always_lock_free);

// Whether a fit runs, whose step boundaries can act on a signal.
std::atomic<bool> g_fitting{false};

// Connectors alive now; the handler never touches it.
std::atomic<int> g_live_connectors{0};

int rank_of(int signal) {
  switch (signal) {
    case SIGTERM: return 3;
    case SIGINT: return 2;
    case SIGUSR1: return 1;
    default: return 0;
  }
}

// Keeps the strongest signal: SIGTERM over SIGINT over SIGUSR1.
void record_stop_signal(int signal) {
  int seen = g_stop_signal.load();
  while (rank_of(signal) > rank_of(seen) && !g_stop_signal.compare_exchange_weak(seen, signal)) {
  }
  if (signal != SIGUSR1) g_unacted_stops.fetch_add(1);
}

double grace_seconds() {
  const char* text = std::getenv("FULGUR_SIGNAL_GRACE_S");
  if (text == nullptr || *text == '\0') return 25.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0.0)) {
    throw std::invalid_argument(fmt::format("FULGUR_SIGNAL_GRACE_S='{}' is not a positive number of seconds", text));
  }
  return seconds;
}

// The received SIGTERM or SIGINT that no step boundary acted on.
int pending_stop() { return g_stop_signal.load() == SIGINT ? SIGINT : SIGTERM; }

// One line saying where the process was, then the exit a signal gives.
[[noreturn]] void end_on_stop_signal(const std::string& where) {
  const int signal = pending_stop();
  const char* rank = std::getenv("RANK");
  std::cerr << fmt::format("fulgur: rank {}: {} not acted on at a step boundary{}; exiting with {}",
                           rank != nullptr ? rank : "0", SignalConnector::name(signal), where, 128 + signal)
            << std::endl;
  // Local ranks this process started got the signal too: let them say where
  // they were before their parent's exit takes them down.
  for (int i = 0; i < 40 && ::waitpid(-1, nullptr, WNOHANG) >= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::_Exit(128 + signal);
}

}  // namespace

/// Ends the process when a SIGTERM/SIGINT stays unacted for the grace period.
class SignalConnector::Watcher {
 public:
  Watcher() : grace_(grace_seconds()), thread_([this](std::stop_token stop) { watch(stop); }) {}

 private:
  void watch(const std::stop_token& stop) {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> since;
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!wake.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; }) && !stop.stop_requested()) {
      if (g_unacted_stops.load() == 0) {
        since.reset();
        continue;
      }
      if (!since) since = Clock::now();
      // Ctrl-C outside fit: nothing will act on it, so no reason to wait.
      const bool now = g_stop_signal.load() == SIGINT && !g_fitting.load();
      if (now || Clock::now() - *since >= std::chrono::duration<double>(grace_)) exit_now();
    }
  }

  [[noreturn]] void exit_now() const {
    const auto waiting = CollectiveWait::current();
    end_on_stop_signal(fmt::format(
        " within {:g} s; {}", pending_stop() == SIGINT && !g_fitting.load() ? 0.0 : grace_,
        waiting ? fmt::format("waiting in {} for {:.0f} s", waiting->operation, waiting->seconds)
                : std::string("not waiting in a collective")));
  }

  double grace_;
  std::jthread thread_;
};

SignalConnector::SignalConnector() {
  // An inner connector (fit's, inside the CLI's) keeps what the outer one saw.
  const bool outermost = g_live_connectors.fetch_add(1) == 0;
  if (outermost) {
    g_stop_signal.store(0);
    g_unacted_stops.store(0);
  }
  struct sigaction recorder {};
  recorder.sa_handler = record_stop_signal;
  sigemptyset(&recorder.sa_mask);
  // SA_RESTART: a read or a collective interrupted by the signal carries on.
  recorder.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &recorder, &old_usr1_);
  ::sigaction(SIGTERM, &recorder, &old_term_);
  ::sigaction(SIGINT, &recorder, &old_int_);
  if (outermost) watcher_ = std::make_unique<Watcher>();
}

SignalConnector::~SignalConnector() {
  watcher_.reset();
  // SLURM's warning (--signal=USR1) may come after the run ended, while the
  // process winds down; its default action would turn a finished job into a
  // failed one, so the last connector leaves a default SIGUSR1 ignored.
  struct sigaction usr1 = old_usr1_;
  if (g_live_connectors.load() == 1 && (usr1.sa_flags & SA_SIGINFO) == 0 && usr1.sa_handler == SIG_DFL) {
    usr1.sa_handler = SIG_IGN;
  }
  ::sigaction(SIGUSR1, &usr1, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGINT, &old_int_, nullptr);
  g_live_connectors.fetch_sub(1);
}

int SignalConnector::received() const { return g_stop_signal.load(); }

void SignalConnector::clear() {
  g_stop_signal.store(0);
  g_unacted_stops.store(0);
}

bool SignalConnector::agree_to_stop(Strategy& strategy, int64_t global_step) {
  const int local = received();
  int agreed = local;
  if (strategy.world_size() > 1) {
    // The strongest signal any rank received, by rank_of.
    constexpr int kByRank[] = {0, SIGUSR1, SIGINT, SIGTERM};
    const torch::Tensor flag = torch::tensor({static_cast<int64_t>(rank_of(local))}, torch::kInt64);
    agreed = kByRank[strategy.all_reduce(flag.to(strategy.root_device()), ReduceOp::Max).cpu().item<int64_t>()];
  }
  if (agreed == 0 || stop_signal_ != 0) return false;
  stop_signal_ = agreed;
  g_unacted_stops.store(0);  // acted on: the watcher stands down
  // One line per rank: in a multi-node log this shows every rank stopped at the same step.
  std::cerr << fmt::format("fulgur: rank {}: {} received, stopping after step {}", strategy.global_rank(),
                           name(agreed), global_step)
            << std::endl;
  return true;
}

void SignalConnector::end_if_stop_pending(const std::exception_ptr& error) {
  if (g_unacted_stops.load() == 0) return;
  std::string what = "an unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  end_on_stop_signal(fmt::format("; the run failed meanwhile (a peer stopping on it ends collectives): {}",
                                 what.substr(0, what.find('\n'))));
}

void SignalConnector::start_fit() {
  if (stop_signal_ != 0) clear();
  stop_signal_ = 0;
  g_fitting.store(true);
}

void SignalConnector::end_fit() { g_fitting.store(false); }

const char* SignalConnector::name(int signal) {
  if (signal == SIGUSR1) return "SIGUSR1";
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "another signal";
}

}  // namespace fulgur
