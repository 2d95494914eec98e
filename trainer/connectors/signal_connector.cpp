#include <fulgur/trainer/connectors/signal_connector.hpp>

#include <fulgur/core/first_line.hpp>
#include <fulgur/strategies/collectives/collective_wait.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/connectors/stop_signal_error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>

namespace fulgur {
namespace {

double grace_seconds() {
  const char* text = std::getenv("FULGUR_SIGNAL_GRACE_S");
  if (text == nullptr || *text == '\0') return 25.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds > 0.0)) {
    throw std::invalid_argument(fmt::format(
        "[SignalConnector] FULGUR_SIGNAL_GRACE_S='{}' is not a positive number of seconds", text));
  }
  return seconds;
}

// The received SIGTERM or SIGINT that nothing acted on.
int pending_stop() { return StopSignals::received() == SIGINT ? SIGINT : SIGTERM; }

std::string unacted_line(int64_t rank, const std::string& where) {
  return fmt::format("fulgur: rank {}: {} not acted on at a step boundary{}", rank, StopSignals::name(pending_stop()),
                     where);
}

}  // namespace

/// Watches, for one run, for a SIGTERM/SIGINT that stays unacted.
class SignalConnector::Watcher {
 public:
  Watcher(SignalConnector& owner, double grace)
      : owner_(owner), grace_(grace), thread_([this](std::stop_token stop) { watch(stop); }) {}

 private:
  void watch(const std::stop_token& stop) {
    using Clock = std::chrono::steady_clock;
    std::optional<Clock::time_point> since;
    std::mutex mutex;
    std::condition_variable_any wake;
    std::unique_lock lock(mutex);
    while (!wake.wait_for(lock, stop, std::chrono::milliseconds(100), [] { return false; }) && !stop.stop_requested()) {
      if (StopSignals::unacted() == 0 || owner_.expired_.load() != 0) {
        since.reset();
        continue;
      }
      if (!since) since = Clock::now();
      // Outside fit no step boundary will act on it: no reason to wait.
      const bool now = !owner_.fitting_.load();
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

SignalConnector::SignalConnector() : grace_s_(grace_seconds()) {}

SignalConnector::~SignalConnector() { end_run(); }

void SignalConnector::begin_run(bool fitting) {
  end_run();  // a run that was not ended (it cannot happen through the Trainer)
  held_.emplace();
  if (fitting) stop_signal_ = 0;
  forced_.store(false);
  expired_.store(0);
  fitting_.store(fitting);
  watcher_ = std::make_unique<Watcher>(*this, grace_s_);
}

void SignalConnector::end_run() {
  watcher_.reset();
  fitting_.store(false);
  held_.reset();
}

void SignalConnector::act_on_unacted(double waited_s) {
  const auto waiting_now = [this]() -> std::optional<CollectiveWait::Now> {
    return strategy_ != nullptr ? strategy_->collective_wait() : std::nullopt;
  };
  if (fitting_.load() && !waiting_now()) {
    // A collective that just failed (a peer ended on the signal) is on its
    // way to stop_error(), which acts on the signal: give it that moment.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (StopSignals::unacted() == 0) return;
  }
  const int signal = pending_stop();
  const auto waiting = waiting_now();
  const std::string where = fmt::format(
      " within {:g} s; {}", waited_s,
      waiting ? fmt::format("waiting in {} for {:.0f} s", waiting->operation, waiting->seconds)
              : std::string("not waiting in a collective"));
  if (!waiting && !fitting_.load()) return;  // outside fit, check() ends the run at its next hook
  watcher_line_ = unacted_line(rank(), where);
  if (waiting && on_stuck_) {
    forced_.store(true);
    StopSignals::mark_acted();  // acted on: the run ends with a StopSignalError
    std::cerr << watcher_line_ << "; ending the run (process group aborted, local ranks stopped)" << std::endl;
    on_stuck_(signal);
    return;
  }
  // The main thread throws it where it next reaches the Trainer's code.
  std::cerr << watcher_line_ << "; the run stops where it next reaches the Trainer (a hook)" << std::endl;
  expired_.store(signal);
}

void SignalConnector::check() {
  if (const int signal = expired_.exchange(0); signal != 0) {
    StopSignals::mark_acted();
    throw StopSignalError(signal, watcher_line_ + "; the run stops here");
  }
  // Outside fit no step boundary will act on a SIGTERM/SIGINT: the run ends at once.
  if (held_ && !fitting_.load() && StopSignals::unacted() > 0) {
    const int signal = pending_stop();
    StopSignals::mark_acted();
    throw StopSignalError(signal, fmt::format("fulgur: rank {}: {} received outside fit; the run stops here", rank(),
                                              name(signal)));
  }
}

int64_t SignalConnector::rank() const { return strategy_ != nullptr ? strategy_->global_rank() : 0; }

void SignalConnector::on_stuck(const Strategy& strategy, std::function<void(int)> action) {
  on_stuck_ = std::move(action);
  strategy_ = &strategy;
}

int SignalConnector::received() const { return held_ ? StopSignals::received() : 0; }

bool SignalConnector::agree_to_stop(Strategy& strategy, int64_t global_step) {
  const int local = received();
  int agreed = local;
  if (strategy.world_size() > 1) {
    // The strongest signal any rank received, by strength.
    constexpr int kByStrength[] = {0, SIGUSR1, SIGINT, SIGTERM};
    const torch::Tensor flag = torch::tensor({static_cast<int64_t>(StopSignals::strength(local))}, torch::kInt64);
    agreed = kByStrength[strategy.all_reduce(flag.to(strategy.root_device()), ReduceOp::Max).cpu().item<int64_t>()];
  }
  if (agreed == 0 || stop_signal_ != 0) return false;
  stop_signal_ = agreed;
  StopSignals::mark_acted();  // acted on: the watcher stands down
  // One line per rank: in a multi-node log this shows every rank stopped at the same step.
  std::cerr << fmt::format("fulgur: rank {}: {} received, stopping after step {}", strategy.global_rank(),
                           name(agreed), global_step)
            << std::endl;
  return true;
}

std::exception_ptr SignalConnector::stop_error(const std::exception_ptr& error) {
  if (!forced_.load() && StopSignals::unacted() == 0) return error;
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
  StopSignals::mark_acted();  // acted on: the run throws it, nothing is passed on
  expired_.store(0);
  what = detail::first_line(what);
  const std::string message =
      forced_.load() ? fmt::format("{}; the run was ended: {}", watcher_line_, what)
                     : unacted_line(rank(), fmt::format("; the run failed meanwhile (a peer stopping on it ends "
                                                       "collectives): {}",
                                                       what));
  return std::make_exception_ptr(StopSignalError(signal, message));
}

}  // namespace fulgur
