#include <fulgur/strategies/launchers/subprocess_launcher.hpp>

#include <fmt/format.h>

#include <csignal>
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {

SubprocessLauncher::~SubprocessLauncher() { join(); }

void SubprocessLauncher::launch(const LocalLauncherOptions& options) {
  options.check("[SubprocessLauncher::launch]");
  if (options_) {
    // The program's next Trainer: its ranks run it too, in the processes started for the first.
    const auto& o = *options_;
    if (o.nprocs() != options.nprocs() || o.num_nodes() != options.num_nodes() ||
        o.node_rank() != options.node_rank()) {
      throw std::logic_error(fmt::format(
          "[SubprocessLauncher::launch] this launcher started {} local rank(s) of {} node(s) (node_rank {}) already; "
          "got nprocs {}, num_nodes {}, node_rank {}",
          o.nprocs(), o.num_nodes(), o.node_rank(), options.nprocs(), options.num_nodes(), options.node_rank()));
    }
    return;
  }
  {
    const std::lock_guard lock(peers_mutex_);
    peers_.emplace("SubprocessLauncher", options.grace_period_s());
  }
  const std::vector<std::string> args = ProcessSupervisor::own_command_line();
  // Node 0's launcher serves the ranks' store while they run: every Trainer
  // of the program meets on it (see LauncherStore).
  if (options.node_rank() == 0) {
    store_.emplace(options.main_address(), static_cast<int>(options.main_port()), options.num_nodes() == 1);
  }
  const int64_t port = store_ ? store_->port() : options.main_port();
  for (int64_t local_rank = 1; local_rank < options.nprocs(); ++local_rank) {
    peers_->start(options.global_rank(local_rank), args, options.rank_environment(local_rank, port));
  }
  rank_zero_environment_.clear();
  for (const auto& [name, value] : options.rank_environment(0, port)) rank_zero_environment_[name] = value;
  options_ = options;
}

void SubprocessLauncher::terminate_peers(int signal) {
  const std::lock_guard lock(peers_mutex_);
  if (peers_) peers_->terminate_running(signal);
}

EnvLookup SubprocessLauncher::environment() const {
  return [own = rank_zero_environment_, process = process_environment()](const std::string& name) {
    if (const auto it = own.find(name); it != own.end()) return std::optional<std::string>(it->second);
    return process(name);
  };
}

int SubprocessLauncher::join(bool stop) {
  if (!peers_) return 0;
  if (stop && !peers_->empty()) {
    // This process failed, often because a peer died: its connection can
    // close a moment before it can be reaped. Wait that moment, so the line
    // names the dead peer and not the ones stopped here.
    for (int tick = 0; tick < 25 && !peers_->found_failure(); ++tick) {
      peers_->poll();
      struct timespec pause {0, 20'000'000};
      ::nanosleep(&pause, nullptr);
    }
    peers_->stop(SIGTERM);
  }
  const int result = peers_->wait();
  const std::lock_guard lock(peers_mutex_);
  peers_.reset();
  store_.reset();
  options_.reset();
  rank_zero_environment_.clear();
  return result;
}

}  // namespace fulgur
