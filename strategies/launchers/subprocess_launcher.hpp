#pragma once

#include <fulgur/strategies/launchers/local_launcher_options.hpp>
#include <fulgur/strategies/launchers/process_supervisor.hpp>

#include <memory>

namespace fulgur {

/// What a Trainer does when no launcher started its ranks (Lightning's
/// subprocess-script launcher): this process becomes local rank 0 of its
/// node and keeps running; local ranks 1..nprocs-1 start as copies of it
/// (/proc/self/exe with this process's own command line, read from
/// /proc/self/cmdline), so they run the same program from the top. This
/// process's environment gets the variables the ranks get (RANK,
/// WORLD_SIZE, ..., FULGUR_LAUNCHED=1), so everything after reads as a
/// torchrun launch and a second Trainer in the same program joins the same
/// ranks.
///
/// The peers belong to the process, not to one Trainer: a Trainer that
/// is destroyed while the program goes on must not wait for them (they may
/// be running the next Trainer with it). So start() keeps the launcher as
/// this process's (current()), every Trainer of the program holds it, and
/// join() — Trainer::exit_code() — waits for the peers; what nobody joined
/// is joined when the program exits normally (the launcher's destructor).
class SubprocessLauncher {
 public:
  /// Checks the options, starts local ranks 1..nprocs-1 and sets this
  /// process's rank variables; returns the process's launcher. Throws when
  /// this process started peers already, or when a peer could not be
  /// started (the ones started are stopped first).
  static std::shared_ptr<SubprocessLauncher> start(LocalLauncherOptions options);
  /// The launcher that started this process's peers; null when none did.
  static std::shared_ptr<SubprocessLauncher> current();

  /// Waits for the peers and returns 0 when all exited 0, else the first
  /// failure's code (128 + signal when killed); the failure is reported on
  /// stderr in one line ("[SubprocessLauncher] rank 1 exited with code 3")
  /// and the other peers are stopped (SIGTERM, SIGKILL after the grace
  /// period). With `stop`, stops them first (the error path: a peer may be
  /// waiting in a collective for this process). Returns 0 once joined.
  int join(bool stop = false);

  const LocalLauncherOptions& options() const { return options_; }

  explicit SubprocessLauncher(LocalLauncherOptions options);  // use start()
  ~SubprocessLauncher();
  SubprocessLauncher(const SubprocessLauncher&) = delete;
  SubprocessLauncher& operator=(const SubprocessLauncher&) = delete;

 private:
  LocalLauncherOptions options_;
  ProcessSupervisor peers_;
};

}  // namespace fulgur
