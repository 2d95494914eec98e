#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/launchers/launcher_store.hpp>
#include <fulgur/strategies/launchers/local_launcher_options.hpp>
#include <fulgur/strategies/launchers/process_supervisor.hpp>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace fulgur {

/// Starts this program's other local ranks when no launcher did (Lightning's
/// subprocess-script launcher): this process stays local rank 0 and keeps
/// running; local ranks 1..nprocs-1 start as new processes of the same
/// program (/proc/self/exe with this process's command line, read from
/// /proc/self/cmdline) and run it from the top, each with its rank's
/// variables (RANK, WORLD_SIZE, ..., FULGUR_LAUNCHED=1) in its own
/// environment. This process's environment is left as it is: what rank 0
/// reads as its own is environment().
///
/// An object the program owns, not a process-wide one: the peers live as
/// long as it does (its destructor joins them), so a program that builds
/// several Trainers one after another makes one launcher and hands it to
/// each (`Trainer(options, {}, {}, std::nullopt, launcher)`; the
/// command line does so for its tuners and its run). A Trainer handed none
/// makes its own, which lives as long as that Trainer. On node 0 it also
/// serves the ranks' rendezvous store while they run (LauncherStore), so
/// the Trainers one after another never meet each other's store.
class SubprocessLauncher {
 public:
  SubprocessLauncher() = default;
  /// Joins the peers still running (see join()).
  ~SubprocessLauncher();
  SubprocessLauncher(const SubprocessLauncher&) = delete;
  SubprocessLauncher& operator=(const SubprocessLauncher&) = delete;

  /// Checks the options and starts local ranks 1..nprocs-1. Once started,
  /// a later call (the program's next Trainer) starts nothing when its
  /// nprocs, num_nodes and node_rank are the same, and throws when not.
  /// When a peer cannot be started, the ones started are stopped and it throws.
  void launch(const LocalLauncherOptions& options);
  /// Whether launch() started the peers (and join() has not forgotten them).
  bool launched() const { return options_.has_value(); }

  /// The variables rank 0 reads as its own, over this process's
  /// environment: the rank environment launch() gave local rank 0 (RANK=0,
  /// WORLD_SIZE, MASTER_PORT, ...). This process's environment alone before launch().
  EnvLookup environment() const;

  /// Waits for the peers and returns 0 when all exited 0, else the first
  /// failure's code (128 + signal when killed); the failure is reported on
  /// stderr in one line ("[SubprocessLauncher] rank 1 exited with code 3")
  /// and the other peers are stopped (SIGTERM, SIGKILL after the grace
  /// period). With `stop`, stops them first (the error path: a peer may be
  /// waiting in a collective for this process). Returns 0 once joined;
  /// launch() may start peers again afterwards.
  int join(bool stop = false);
  /// From another thread, while this process's thread is held in a
  /// collective (SignalConnector's watcher): ends the peers (`signal`, the
  /// stop signal this process got; SIGKILL after the grace period) so that
  /// the collective fails. join() reaps them.
  void terminate_peers(int signal);

 private:
  std::optional<LocalLauncherOptions> options_;
  std::map<std::string, std::string> rank_zero_environment_;
  std::optional<ProcessSupervisor> peers_;
  std::optional<LauncherStore> store_;  // node 0: the store of the ranks' groups
  // peers_ is reset by join() while terminate_peers() may run on another thread.
  std::mutex peers_mutex_;
};

}  // namespace fulgur
