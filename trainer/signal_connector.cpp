#include <fulgur/trainer/signal_connector.hpp>

#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>

#include <atomic>
#include <iostream>

namespace fulgur {
namespace {

// A signal handler can only reach state with static storage; this is the one
// such variable, written by the handler and read by SignalConnector.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

// Connectors alive now; the handler never touches it.
std::atomic<int> g_live_connectors{0};

// Keeps the larger number, so SIGTERM (15) wins over SIGUSR1 (10) on Linux.
void record_stop_signal(int signal) {
  int seen = g_stop_signal.load();
  while (signal > seen && !g_stop_signal.compare_exchange_weak(seen, signal)) {
  }
}

}  // namespace

SignalConnector::SignalConnector() {
  // An inner connector (fit's, inside the CLI's) keeps what the outer one saw.
  if (g_live_connectors.fetch_add(1) == 0) g_stop_signal.store(0);
  struct sigaction recorder {};
  recorder.sa_handler = record_stop_signal;
  sigemptyset(&recorder.sa_mask);
  // SA_RESTART: a read or a collective interrupted by the signal carries on.
  recorder.sa_flags = SA_RESTART;
  ::sigaction(SIGUSR1, &recorder, &old_usr1_);
  ::sigaction(SIGTERM, &recorder, &old_term_);
}

SignalConnector::~SignalConnector() {
  ::sigaction(SIGUSR1, &old_usr1_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  g_live_connectors.fetch_sub(1);
}

int SignalConnector::received() const { return g_stop_signal.load(); }

void SignalConnector::clear() { g_stop_signal.store(0); }

bool SignalConnector::agree_to_stop(Strategy& strategy, int64_t global_step) {
  const int local = received();
  int agreed = local;
  if (strategy.world_size() > 1) {
    const torch::Tensor flag = torch::tensor({static_cast<int64_t>(local)}, torch::kInt64).to(strategy.root_device());
    agreed = static_cast<int>(strategy.all_reduce(flag, ReduceOp::Max).item<int64_t>());
  }
  if (agreed == 0 || stop_signal_ != 0) return false;
  stop_signal_ = agreed;
  // One line per rank: in a multi-node log this shows every rank stopped at the same step.
  std::cerr << fmt::format("fulgur: rank {}: {} received, stopping after step {}", strategy.global_rank(),
                           name(agreed), global_step)
            << std::endl;
  return true;
}

void SignalConnector::start_fit() {
  if (stop_signal_ != 0) clear();
  stop_signal_ = 0;
}

const char* SignalConnector::name(int signal) {
  if (signal == SIGUSR1) return "SIGUSR1";
  if (signal == SIGTERM) return "SIGTERM";
  return "another signal";
}

}  // namespace fulgur
