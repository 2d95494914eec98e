#pragma once

#include <fulgur/strategies/cluster_environment.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace fulgur {

/// Options of a LocalLauncher, with chainable setters:
/// `LocalLauncherOptions(4).main_port(29500)`. LocalLauncher validates them
/// when it is constructed, before any process is started.
struct LocalLauncherOptions {
  LocalLauncherOptions() = default;
  explicit LocalLauncherOptions(int64_t nprocs) : nprocs_(nprocs) {}

  /// Processes started on this node, one per local rank (>= 1).
  TORCH_ARG(int64_t, nprocs) = 1;
  /// Nodes in the job (>= 1); every node runs the same launcher.
  TORCH_ARG(int64_t, num_nodes) = 1;
  /// This node's index in [0, num_nodes).
  TORCH_ARG(int64_t, node_rank) = 0;
  /// Address of the rank-0 rendezvous (MASTER_ADDR of every child).
  TORCH_ARG(std::string, main_address) = "127.0.0.1";
  /// Port of the rendezvous in [0, 65535]. 0 picks a free TCP port on
  /// main_address at launch(); only valid with num_nodes == 1, because every
  /// node must agree on the port and each would pick its own.
  TORCH_ARG(int64_t, main_port) = 0;
  /// Seconds between asking the remaining children to stop (SIGTERM, or the
  /// signal the launcher received) and killing them (SIGKILL); >= 0.
  TORCH_ARG(double, grace_period_s) = 5.0;
};

/// Starts the local ranks of a job by re-executing the running binary
/// (/proc/self/exe, same argv) once per local rank, in the manner of
/// torchrun's elastic agent on one node. Each child gets RANK, WORLD_SIZE,
/// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and
/// FULGUR_LAUNCHED=1 (so the Trainer in it reads a launched process and never
/// launches again). This is torchrun for programs without a Trainer (tests,
/// benchmarks); a Trainer starts its ranks itself with start_peers(). The calling process only supervises: the first child that exits
/// non-zero or dies by a signal is reported on stderr in one line, the others
/// are stopped (SIGTERM, then SIGKILL after grace_period_s) and launch()
/// returns that child's code. SIGINT / SIGTERM sent to the supervisor are
/// forwarded to the children the same way, and launch() returns 128 + signal.
/// Children die with the supervisor even when it is SIGKILLed
/// (PR_SET_PDEATHSIG); that signal follows the thread that called launch(),
/// which stays inside launch() until every child is reaped.
class LocalLauncher {
 public:
  /// Looks up an environment variable; nullopt when it is not set.
  using EnvLookup = fulgur::EnvLookup;  // the lookup the cluster environments read through

  explicit LocalLauncher(LocalLauncherOptions options);

  /// Runs nprocs copies of this binary with `argv` (argv[0] is kept as the
  /// children's argv[0]) and waits for all of them. Returns 0 when every
  /// child exits 0, the exit code of the first failed child (128 + signal
  /// when it was killed), or 128 + signal when the supervisor was interrupted
  /// by SIGINT / SIGTERM. Throws when no child could be started; only one
  /// launch() may run at a time in a process.
  int launch(int argc, const char* const* argv);

  const LocalLauncherOptions& options() const { return options_; }

  /// What a Trainer does when no launcher started its ranks (Lightning's
  /// subprocess-script launcher): this process becomes local rank 0 of this
  /// node and keeps running; local ranks 1..nprocs-1 start as copies of it
  /// (/proc/self/exe with this process's own command line, read from
  /// /proc/self/cmdline), so they run the same program from the top. This
  /// process's environment gets the variables its children get (RANK,
  /// WORLD_SIZE, ..., FULGUR_LAUNCHED=1), so everything after reads as a
  /// torchrun launch and a second Trainer in the same program joins the same
  /// ranks. The peers belong to the process, not to one Trainer: they live
  /// until they exit, and join_peers() (called at the latest when the process
  /// exits normally) waits for them. They die with this process's launching
  /// thread (PR_SET_PDEATHSIG). Throws when a peer could not be started.
  void start_peers();

  /// Waits for every peer start_peers() started in this process and returns
  /// 0 when all exited 0, else the first failure's code (128 + signal when
  /// killed); the failure is reported on stderr in one line
  /// ("[LocalLauncher] rank 1 exited with code 3") and the other peers are
  /// stopped (SIGTERM, SIGKILL after grace_period_s). With `stop`, stops them
  /// first (the error path: a peer may be waiting in a collective for this
  /// process). Returns 0 when no peer was started.
  static int join_peers(bool stop = false, double grace_period_s = 5.0);

  /// A TCP port that is free on `address` (a numeric IPv4/IPv6 address or a
  /// host name), found by binding port 0 and asking the kernel which port it
  /// chose. The port is released before returning, so another process could
  /// take it before the children bind it — the same race torchrun accepts.
  static int pick_free_port(const std::string& address);

 private:
  LocalLauncherOptions options_;
};

}  // namespace fulgur
