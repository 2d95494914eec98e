#include <fulgur/strategies/mpi/communicator_environment.hpp>
#include <fulgur/strategies/mpi/mpi_runtime.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

CommunicatorEnvironment::CommunicatorEnvironment(int64_t communicator) : communicator_(communicator) {
  const auto layout = MpiRuntime::layout(communicator);
  if (!layout) {
    throw MpiRefusedError(
        "[CommunicatorEnvironment] this process is outside the communicator (MPI_COMM_NULL): only the "
        "communicator's ranks train; the others make no Trainer, Fabric or OnlineTrainer and go on");
  }
  global_rank_ = layout->rank;
  world_size_ = layout->size;
  local_rank_ = layout->local_rank;
  local_world_size_ = layout->local_size;
  num_nodes_ = std::max<int64_t>(1, world_size_ / local_world_size_);
  node_rank_ = global_rank_ / local_world_size_;
}

std::string CommunicatorEnvironment::world_size_source() const {
  return fmt::format("the program's MPI communicator ({} ranks)", world_size_);
}

}  // namespace fulgur
