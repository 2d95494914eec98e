// The fulgur_mpi module: loaded by MpiRuntime when a run chooses
// process_group_backend 'mpi', so a program that never does never loads MPI.
#include <fulgur/strategies/mpi/mpi_process_group.hpp>

#include <mpi.h>

#include <stdexcept>
#include <string>

#define FULGUR_MPI_EXPORT extern "C" __attribute__((visibility("default")))

/// A group of every rank of MPI_COMM_WORLD (`size` 0: any size), or of the
/// communicator whose Fortran handle is `comm` (MPI_Comm_c2f) when `has_comm`.
FULGUR_MPI_EXPORT void fulgur_mpi_group(int has_comm, MPI_Fint comm, int rank, int size,
                                        c10::intrusive_ptr<c10d::Backend>& group) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (has_comm != 0 && initialised == 0) {
    throw std::invalid_argument("[MpiRuntime] a communicator was given but MPI is not initialised: the program "
                                "initialises MPI before it hands fulgur a communicator");
  }
  const MPI_Comm c = has_comm != 0 ? MPI_Comm_f2c(comm) : MPI_COMM_WORLD;
  group = fulgur::MpiProcessGroup::create(c, rank, size);
}

FULGUR_MPI_EXPORT void fulgur_mpi_split(const c10::intrusive_ptr<c10d::Backend>& parent, const std::string& name,
                                        int rank, int size, c10::intrusive_ptr<c10d::Backend>& group) {
  auto* mpi = dynamic_cast<fulgur::MpiProcessGroup*>(parent.get());
  if (mpi == nullptr) throw std::logic_error("[MpiRuntime::split] the parent group is not an MPI group");
  group = mpi->split(name, rank, size);
}

/// This process's place in the communicator: rank, size, and rank and size
/// among the ranks that share its node; all -1 for MPI_COMM_NULL (a rank
/// outside it).
FULGUR_MPI_EXPORT void fulgur_mpi_comm_layout(MPI_Fint comm, int* layout) {
  for (int i = 0; i < 4; ++i) layout[i] = -1;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    throw std::invalid_argument("[MpiRuntime] a communicator was given but MPI is not initialised: the program "
                                "initialises MPI before it hands fulgur a communicator");
  }
  const MPI_Comm c = MPI_Comm_f2c(comm);
  if (c == MPI_COMM_NULL) return;
  MPI_Comm_rank(c, &layout[0]);
  MPI_Comm_size(c, &layout[1]);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, layout[0], MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &layout[2]);
  MPI_Comm_size(node, &layout[3]);
  MPI_Comm_free(&node);
}
