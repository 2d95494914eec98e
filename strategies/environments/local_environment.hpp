#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

namespace fulgur {

/// No launcher: this is the only process (world 1, every rank 0, one node).
/// When the user asks for several devices, fulgur's own Launcher starts the
/// other processes (creates_processes_externally() is false) and gives them
/// launcher variables, so the children detect a real environment. The port
/// is MASTER_PORT when set, else 0, which asks the Launcher to pick a free one.
class LocalEnvironment : public ClusterEnvironment {
 public:
  explicit LocalEnvironment(const EnvLookup& env = process_environment());

  std::string name() const override { return "local"; }
  bool creates_processes_externally() const override { return false; }
  std::string world_size_source() const override;

};

}  // namespace fulgur
