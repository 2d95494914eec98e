#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

namespace fulgur {

/// Processes started by mpirun / mpiexec, read from the variables each MPI
/// launcher exports before MPI_Init (fulgur never links MPI itself):
///   OpenMPI        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
///   MVAPICH        MV2_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE
///   MPICH / Intel  PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
/// They are tried in that order; MVAPICH comes before PMI because its hydra
/// launcher may export PMI_RANK too, and its own variables are complete.
/// node_rank = rank / local size and num_nodes = size / local size, which
/// assumes the same number of ranks on every node (OMPI_COMM_WORLD_NODE_RANK
/// is not used: despite its name it is a rank within the node, counted
/// across all jobs, not the index of the node).
///
/// Gloo and NCCL need a rendezvous, which MPI's variables do not give, so
/// the user provides one: MASTER_ADDR and MASTER_PORT (a TCP store on rank
/// 0's host), or FULGUR_FILE_STORE=<path on a shared filesystem> (a
/// FileStore; it wins when both are given, and main_address()/main_port()
/// then report MASTER_ADDR or 127.0.0.1 and MASTER_PORT or 0). With none,
/// rendezvous_error() says so; process_group_backend 'mpi' needs none.
class MPIEnvironment : public ClusterEnvironment {
 public:
  explicit MPIEnvironment(const EnvLookup& env = process_environment());

  /// The rank variable of any supported MPI flavour is set.
  static bool detect(const EnvLookup& env);

  std::string name() const override { return "mpi"; }
  bool creates_processes_externally() const override { return true; }
  std::string world_size_source() const override;
  std::optional<std::string> file_store_path() const override { return file_store_path_; }
  std::optional<std::string> rendezvous_error() const override { return rendezvous_error_; }

  /// Which launcher's variables were read: "OpenMPI", "MVAPICH" or "MPICH/Intel MPI".
  const std::string& flavor() const { return flavor_; }

 private:
  std::string flavor_;
  std::string size_var_;
  std::string local_size_var_;
  std::optional<std::string> file_store_path_;
  std::optional<std::string> rendezvous_error_;
};

}  // namespace fulgur
