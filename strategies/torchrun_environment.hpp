#pragma once

#include <fulgur/strategies/cluster_environment.hpp>

namespace fulgur {

/// Processes started by torchrun (torch.distributed.run) or anything that
/// exports the same variables: RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, MASTER_PORT (all required), MASTER_ADDR (default
/// 127.0.0.1), GROUP_RANK (node rank; default RANK / LOCAL_WORLD_SIZE) and
/// GROUP_WORLD_SIZE (node count; default WORLD_SIZE / LOCAL_WORLD_SIZE).
/// torchrun sets all of them; the defaults exist for hand-written launchers.
class TorchrunEnvironment : public ClusterEnvironment {
 public:
  explicit TorchrunEnvironment(const EnvLookup& env = process_environment());

  /// RANK and WORLD_SIZE are both set.
  static bool detect(const EnvLookup& env);

  std::string name() const override { return "torchrun"; }
  bool creates_processes_externally() const override { return true; }
  int64_t world_size() const override { return world_size_; }
  int64_t global_rank() const override { return global_rank_; }
  int64_t local_rank() const override { return local_rank_; }
  int64_t node_rank() const override { return node_rank_; }
  int64_t num_nodes() const override { return num_nodes_; }
  int64_t local_world_size() const override { return local_world_size_; }
  std::string main_address() const override { return main_address_; }
  int main_port() const override { return main_port_; }
  std::string world_size_source() const override;

 private:
  int64_t world_size_ = 1;
  int64_t global_rank_ = 0;
  int64_t local_rank_ = 0;
  int64_t node_rank_ = 0;
  int64_t num_nodes_ = 1;
  int64_t local_world_size_ = 1;
  std::string main_address_;
  int main_port_ = 0;
};

}  // namespace fulgur
