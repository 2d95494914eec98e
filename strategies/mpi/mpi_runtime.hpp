#pragma once

#include <fulgur/strategies/mpi/mpi_refused_error.hpp>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur {

/// process_group_backend 'mpi', from the fulgur library, which never links
/// MPI: the fulgur_mpi module (strategies/mpi: MpiProcessGroup, MpiEngine)
/// links the site's MPI and is loaded the first time a run asks for it.
/// What MPI refuses (a communicator, a thread level, the ranks' numbering)
/// is thrown as MpiRefusedError.
class MpiRuntime {
 public:
  /// A group over MPI_COMM_WORLD, or over the program's communicator given
  /// by its Fortran handle (MPI_Comm_c2f). `rank`/`size` are what the run
  /// expects; MPI numbering the process otherwise is a clear error.
  static c10::intrusive_ptr<c10d::Backend> group(std::optional<int64_t> communicator, int rank, int size);
  /// The ranks of `parent` that give the same `name`, as `rank` of `size`.
  static c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Backend>& parent,
                                                 const std::string& name, int rank, int size);
  /// Where this process sits in a communicator (given by its Fortran handle).
  struct Layout {
    int rank = 0, size = 1;
    int local_rank = 0, local_size = 1;  // among its ranks on this node
  };
  /// nullopt for MPI_COMM_NULL (the process is outside it). Collective over
  /// the communicator (it asks which ranks share a node).
  static std::optional<Layout> layout(int64_t communicator);
  /// Background training beside a program that calls MPI itself: MPI must
  /// provide MPI_THREAD_MULTIPLE; MpiRefusedError naming both levels
  /// otherwise. `who` starts the message.
  static void require_concurrent_calls(const std::string& who);
  /// fulgur was built with its MPI module (FULGUR_WITH_MPI).
  static bool built();
};

}  // namespace fulgur
