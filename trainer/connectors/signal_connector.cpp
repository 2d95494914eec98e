#include <fulgur/trainer/connectors/signal_connector.hpp>

#include <fulgur/strategies/collectives/collective_wait.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>

#include <fmt/format.h>

#include <unistd.h>

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

// A signal handler can only reach state with static storage, so what it
// writes is file-level; nothing else here is. The strongest signal received:
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");
// SIGTERMs and SIGINTs received that no step boundary has acted on yet.
std::atomic<int> g_unacted_stops{0};

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

std::string unacted_line(int64_t rank, const std::string& where) {
  return fmt::format("fulgur: rank {}: {} not acted on at a step boundary{}", rank, SignalConnector::name(pending_stop()),
                     where);
}

}  // namespace

/// Watches for a SIGTERM/SIGINT that stays unacted for the grace period.
class SignalConnector::Watcher {
 public:
  explicit Watcher(SignalConnector& owner)
      : owner_(owner), grace_(grace_seconds()), thread_([this](std::stop_token stop) { watch(stop); }) {}
  double grace() const { return grace_; }

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
      const bool now = g_stop_signal.load() == SIGINT && !owner_.fitting_.load();
      const double waited = std::chrono::duration<double>(Clock::now() - *since).count();
      if (now || waited >= grace_) {
        owner_.act_on_unacted(now ? 0.0 : grace_);
        since.reset();
      }
    }
  }

  SignalConnector& owner_;
  double grace_;
  std::jthread thread_;
};

SignalConnector::SignalConnector() {
  struct sigaction recorder {};
  recorder.sa_handler = record_stop_signal;
  sigemptyset(&recorder.sa_mask);
  // SA_RESTART: a read or a collective interrupted by the signal carries on.
  recorder.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &recorder, &old_usr1_);
  ::sigaction(SIGTERM, &recorder, &old_term_);
  ::sigaction(SIGINT, &recorder, &old_int_);
  // An inner connector (a second Trainer alive) keeps what the outer one saw.
  outermost_ = (old_term_.sa_flags & SA_SIGINFO) != 0 || old_term_.sa_handler != record_stop_signal;
  if (outermost_) {
    g_stop_signal.store(0);
    g_unacted_stops.store(0);
    watcher_ = std::make_unique<Watcher>(*this);
  }
}

SignalConnector::~SignalConnector() {
  watcher_.reset();
  // SLURM's warning (--signal=USR1) may come after the run ended, while the
  // process winds down; its default action would turn a finished job into a
  // failed one, so the outermost connector leaves a default SIGUSR1 ignored.
  struct sigaction usr1 = old_usr1_;
  if (outermost_ && (usr1.sa_flags & SA_SIGINFO) == 0 && usr1.sa_handler == SIG_DFL) usr1.sa_handler = SIG_IGN;
  restore(usr1);
}

void SignalConnector::restore(const struct sigaction& usr1) const {
  ::sigaction(SIGUSR1, &usr1, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGINT, &old_int_, nullptr);
}

void SignalConnector::act_on_unacted(double waited_s) {
  const auto waiting_now = [this]() -> std::optional<CollectiveWait::Now> {
    return strategy_ != nullptr ? strategy_->collective_wait() : std::nullopt;
  };
  if (fitting_.load() && !waiting_now()) {
    // A collective that just failed (a peer ended on the signal) is on its
    // way to stop_error(), which acts on the signal: give it that moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (g_unacted_stops.load() == 0) return;
  }
  const int signal = pending_stop();
  const auto waiting = waiting_now();
  const std::string where = fmt::format(
      " within {:g} s; {}", waited_s,
      waiting ? fmt::format("waiting in {} for {:.0f} s", waiting->operation, waiting->seconds)
              : std::string("not waiting in a collective"));
  if (fitting_.load() && waiting && on_stuck_) {
    forced_line_ = unacted_line(rank(), where);
    forced_.store(true);
    g_unacted_stops.store(0);  // acted on: fit ends with a StopSignalError
    std::cerr << forced_line_ << "; ending the run (process group aborted, local ranks stopped)" << std::endl;
    on_stuck_(signal);
    return;
  }
  // Nothing here can act on it: whoever handled the signal before us does.
  std::cerr << unacted_line(rank(), where) << "; passing it on to the program's handler" << std::endl;
  g_unacted_stops.store(0);
  restore(old_usr1_);
  ::kill(::getpid(), signal);
}

int64_t SignalConnector::rank() const { return strategy_ != nullptr ? strategy_->global_rank() : 0; }

void SignalConnector::on_stuck(const Strategy& strategy, std::function<void(int)> action) {
  on_stuck_ = std::move(action);
  strategy_ = &strategy;
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

std::exception_ptr SignalConnector::stop_error(const std::exception_ptr& error) {
  if (!forced_.load() && g_unacted_stops.load() == 0) return error;
  std::string what = "an unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const StopSignalError&) {
    return error;
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  const int signal = pending_stop();
  g_unacted_stops.store(0);  // acted on: fit throws it, nothing is passed on
  what = what.substr(0, what.find('\n'));
  const std::string message =
      forced_.load() ? fmt::format("{}; the run was ended: {}", forced_line_, what)
                     : unacted_line(rank(), fmt::format("; the run failed meanwhile (a peer stopping on it ends "
                                                       "collectives): {}",
                                                       what));
  return std::make_exception_ptr(StopSignalError(signal, message));
}

void SignalConnector::start_fit() {
  if (stop_signal_ != 0) clear();
  stop_signal_ = 0;
  forced_.store(false);
  fitting_.store(true);
}

void SignalConnector::end_fit() { fitting_.store(false); }

const char* SignalConnector::name(int signal) {
  if (signal == SIGUSR1) return "SIGUSR1";
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "another signal";
}

}  // namespace fulgur
