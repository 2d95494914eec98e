#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur {

/// "Who am I" from the program's own MPI communicator (TrainerOptions::
/// mpi_communicator, its Fortran handle): the communicator's ranks are the
/// run's ranks, any subset of MPI_COMM_WORLD, numbered as MPI numbers them;
/// ranks on one node (MPI_COMM_TYPE_SHARED) make its local ranks. No
/// variable and no rendezvous: the collectives go over the communicator
/// (process_group_backend mpi). Constructing one is collective over the
/// communicator; a process outside it (MPI_COMM_NULL) is refused.
class CommunicatorEnvironment : public ClusterEnvironment {
 public:
  explicit CommunicatorEnvironment(int64_t communicator);

  std::string name() const override { return "mpi communicator"; }
  bool creates_processes_externally() const override { return true; }
  std::string world_size_source() const override;
  std::optional<int64_t> mpi_communicator() const override { return communicator_; }

 private:
  int64_t communicator_;
};

}  // namespace fulgur
