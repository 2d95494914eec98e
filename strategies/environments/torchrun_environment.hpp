#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

namespace fulgur {

/// Processes started by torchrun (torch.distributed.run) or anything that
/// exports the same variables: RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_PORT (all required), MASTER_ADDR (default
/// 127.0.0.1), GROUP_RANK (node rank; default RANK / LOCAL_WORLD_SIZE) and
/// GROUP_WORLD_SIZE (node count; default WORLD_SIZE / LOCAL_WORLD_SIZE).
/// torchrun sets all of them; the defaults exist for hand-written launchers.
/// The store is hosted outside the ranks when TORCHELASTIC_USE_AGENT_STORE
/// is True (torchrun's agent; keys under fulgur/attempt_<restart count>) or
/// FULGUR_LAUNCHER_STORE is 1 (fulgur's launchers; keys under fulgur/launcher).
class TorchrunEnvironment : public ClusterEnvironment {
 public:
  explicit TorchrunEnvironment(const EnvLookup& env = process_environment());

  /// RANK and WORLD_SIZE are both set.
  static bool detect(const EnvLookup& env);

  std::string name() const override { return "torchrun"; }
  bool creates_processes_externally() const override { return true; }
  std::string world_size_source() const override;

};

}  // namespace fulgur
