#include <fulgur/strategies/launchers/subprocess_launcher.hpp>

#include <fulgur/strategies/launchers/network.hpp>

#include <cstdlib>
#include <ctime>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {
namespace {

// The process's launcher: the peers are this process's children, so there
// is one per process at most; its destructor joins them at normal exit.
std::mutex& process_launcher_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<SubprocessLauncher>& process_launcher() {
  static std::shared_ptr<SubprocessLauncher> launcher;
  return launcher;
}

}  // namespace

SubprocessLauncher::SubprocessLauncher(LocalLauncherOptions options)
    : options_((options.check("[SubprocessLauncher]"), std::move(options))),
      peers_("SubprocessLauncher", options_.grace_period_s()) {}

SubprocessLauncher::~SubprocessLauncher() { join(); }

std::shared_ptr<SubprocessLauncher> SubprocessLauncher::start(LocalLauncherOptions options) {
  std::lock_guard<std::mutex> lock(process_launcher_mutex());
  if (process_launcher()) {
    throw std::logic_error("[SubprocessLauncher::start] this process started its local ranks already");
  }
  auto launcher = std::make_shared<SubprocessLauncher>(std::move(options));
  const auto& o = launcher->options_;
  const std::vector<std::string> args = ProcessSupervisor::own_command_line();
  const int64_t port = o.main_port() != 0 ? o.main_port() : pick_free_port(o.main_address());
  for (int64_t local_rank = 1; local_rank < o.nprocs(); ++local_rank) {
    launcher->peers_.start(o.global_rank(local_rank), args, o.rank_environment(local_rank, port));
  }
  for (const auto& [name, value] : o.rank_environment(0, port)) {
    // The OpenMP runtime read its policy when this process started.
    if (name != "OMP_WAIT_POLICY") ::setenv(name.c_str(), value.c_str(), 1);
  }
  process_launcher() = launcher;
  return launcher;
}

std::shared_ptr<SubprocessLauncher> SubprocessLauncher::current() {
  std::lock_guard<std::mutex> lock(process_launcher_mutex());
  return process_launcher();
}

int SubprocessLauncher::join(bool stop) {
  if (peers_.empty()) return 0;
  if (stop) {
    // This process failed, often because a peer died: its connection can
    // close a moment before it can be reaped. Wait that moment, so the line
    // names the dead peer and not the ones stopped here.
    for (int tick = 0; tick < 25 && !peers_.found_failure(); ++tick) {
      peers_.poll();
      struct timespec pause {0, 20'000'000};
      ::nanosleep(&pause, nullptr);
    }
    peers_.stop(SIGTERM);
  }
  return peers_.wait();
}

}  // namespace fulgur
