#pragma once

#include <torch/arg.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Options of the launchers that start a node's local ranks (LocalLauncher,
/// SubprocessLauncher), with chainable setters:
/// `LocalLauncherOptions(4).main_port(29500)`. A launcher checks them when it
/// is constructed, before any process is started.
struct LocalLauncherOptions {
  LocalLauncherOptions() = default;
  explicit LocalLauncherOptions(int64_t nprocs) : nprocs_(nprocs) {}

  /// Processes started on this node, one per local rank (>= 1).
  TORCH_ARG(int64_t, nprocs) = 1;
  /// Nodes in the job (>= 1); every node runs the same launcher.
  TORCH_ARG(int64_t, num_nodes) = 1;
  /// This node's index in [0, num_nodes).
  TORCH_ARG(int64_t, node_rank) = 0;
  /// Address of the rank-0 rendezvous (MASTER_ADDR of every rank).
  TORCH_ARG(std::string, main_address) = "127.0.0.1";
  /// Port of the rendezvous in [0, 65535]. 0 picks a free TCP port on
  /// main_address when the ranks start; only valid with num_nodes == 1,
  /// because every node must agree on the port and each would pick its own.
  TORCH_ARG(int64_t, main_port) = 0;
  /// Seconds between asking the remaining ranks to stop (SIGTERM, or the
  /// signal the launcher received) and killing them (SIGKILL); >= 0.
  TORCH_ARG(double, grace_period_s) = 5.0;
  /// Started ranks get OMP_WAIT_POLICY=PASSIVE when this process has no
  /// OMP_WAIT_POLICY: their idle OpenMP threads sleep instead of spinning
  /// on cores that loader and communication threads need. A new process
  /// reads it at start, so this costs nothing (no restart).
  TORCH_ARG(bool, passive_openmp) = true;

 public:  // TORCH_ARG leaves the members private
  /// Throws std::invalid_argument naming the first bad option, prefixed
  /// with `where` ("[LocalLauncher::LocalLauncher]").
  void check(const std::string& where) const;
  /// The global rank of this node's `local_rank`.
  int64_t global_rank(int64_t local_rank) const { return node_rank() * nprocs() + local_rank; }
  /// What a launched rank finds in its environment: RANK, WORLD_SIZE,
  /// LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT and
  /// FULGUR_LAUNCHED=1 (so a Trainer in it never launches again), and
  /// OMP_WAIT_POLICY=PASSIVE as passive_openmp says.
  std::vector<std::pair<std::string, std::string>> rank_environment(int64_t local_rank, int64_t port) const;
};

}  // namespace fulgur
