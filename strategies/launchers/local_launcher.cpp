#include <fulgur/strategies/launchers/local_launcher.hpp>

#include <fulgur/strategies/launchers/launcher_store.hpp>
#include <fulgur/strategies/launchers/process_supervisor.hpp>

#include <fmt/format.h>

#include <optional>
#include <stdexcept>

namespace fulgur {

LocalLauncher::LocalLauncher(LocalLauncherOptions options) : options_(std::move(options)) {
  options_.check("[LocalLauncher::LocalLauncher]");
}

int LocalLauncher::launch(int argc, const char* const* argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr) {
    throw std::invalid_argument(
        fmt::format("[LocalLauncher::launch] argv must hold at least argv[0], got argc {}", argc));
  }
  const auto& o = options_;
  // Node 0's launcher serves the ranks' store for their whole life.
  std::optional<LauncherStore> store;
  if (o.node_rank() == 0) store.emplace(o.main_address(), static_cast<int>(o.main_port()), o.num_nodes() == 1);
  const int64_t port = store ? store->port() : o.main_port();
  const std::vector<std::string> args(argv, argv + argc);

  ProcessSupervisor::Signals signals;
  ProcessSupervisor ranks("LocalLauncher", o.grace_period_s());
  for (int64_t local_rank = 0; local_rank < o.nprocs(); ++local_rank) {
    // Interrupted during start-up: start no more; wait() forwards the signal.
    if (signals.pending()) break;
    ranks.start(o.global_rank(local_rank), args, o.rank_environment(local_rank, port), &signals);
  }
  return ranks.wait(&signals);
}

}  // namespace fulgur
