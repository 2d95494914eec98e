#pragma once

#include <fulgur/strategies/cluster_environment.hpp>

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
  int64_t world_size() const override { return 1; }
  int64_t global_rank() const override { return 0; }
  int64_t local_rank() const override { return 0; }
  int64_t node_rank() const override { return 0; }
  int64_t num_nodes() const override { return 1; }
  int64_t local_world_size() const override { return 1; }
  std::string main_address() const override { return "127.0.0.1"; }
  int main_port() const override { return main_port_; }
  std::string world_size_source() const override;

 private:
  int main_port_ = 0;
};

}  // namespace fulgur
