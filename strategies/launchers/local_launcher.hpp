#pragma once

#include <fulgur/strategies/launchers/local_launcher_options.hpp>

namespace fulgur {

/// torchrun for programs without a Trainer (tests, benchmarks): starts the
/// local ranks of a job by re-executing the running binary (/proc/self/exe,
/// the argv given) once per local rank, each with the variables of
/// LocalLauncherOptions::rank_environment, and only supervises them (a
/// ProcessSupervisor): the first rank that fails is reported in one line,
/// the others are stopped, and launch() returns its code. SIGINT / SIGTERM
/// sent to the launcher are forwarded to the ranks the same way and launch()
/// returns 128 + signal. A Trainer starts its ranks itself
/// (SubprocessLauncher).
class LocalLauncher {
 public:
  /// Checks the options (std::invalid_argument names the first bad one).
  explicit LocalLauncher(LocalLauncherOptions options);

  /// Runs nprocs copies of this binary with `argv` (argv[0] is kept as the
  /// ranks' argv[0]) and waits for all of them. Returns 0 when every rank
  /// exits 0, the exit code of the first failed rank (128 + signal when it
  /// was killed), or 128 + signal when the launcher was interrupted by
  /// SIGINT / SIGTERM. Throws when no rank could be started; only one
  /// launch() may run at a time in a process.
  int launch(int argc, const char* const* argv);

  const LocalLauncherOptions& options() const { return options_; }

 private:
  LocalLauncherOptions options_;
};

}  // namespace fulgur
