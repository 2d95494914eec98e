// The fulgur_mpi module: loaded by MpiRuntime when a run chooses
// process_group_backend 'mpi', so a program that never does never loads MPI.
#include <fulgur/strategies/mpi/mpi_process_group.hpp>
#include <fulgur/strategies/mpi/mpi_session.hpp>

#include <mpi.h>

#include <stdexcept>
#include <string>

#define FULGUR_MPI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

void require_initialised() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised == 0) {
    throw std::invalid_argument("[MpiRuntime] a communicator was given but MPI is not initialised: the program "
                                "initialises MPI before it hands fulgur a communicator");
  }
  int finalised = 0;
  MPI_Finalized(&finalised);  // MPI_Initialized stays true after MPI_Finalize, and no call is allowed then
  if (finalised != 0) {
    throw std::invalid_argument("[MpiRuntime] a communicator was given but MPI was finalised already: the program "
                                "hands fulgur a communicator before MPI_Finalize");
  }
}

/// The communicator of a Fortran handle, checked before use: an invalid
/// handle is one line here, not an abort of the whole job inside MPI (the
/// check runs with errors returned, the program's error handler put back).
MPI_Comm communicator_of(MPI_Fint handle) {
  const MPI_Comm c = MPI_Comm_f2c(handle);
  if (c == MPI_COMM_NULL) return c;
  // An invalid handle's error goes to MPI_COMM_WORLD's handler under MPI 3 and to MPI_COMM_SELF's under MPI 4.
  MPI_Errhandler world = MPI_ERRHANDLER_NULL, self = MPI_ERRHANDLER_NULL;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world);
  MPI_Comm_get_errhandler(MPI_COMM_SELF, &self);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  int size = 0;
  const int code = MPI_Comm_size(c, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, world);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, self);
  MPI_Errhandler_free(&world);
  MPI_Errhandler_free(&self);
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::invalid_argument("[MpiRuntime] mpi_communicator " + std::to_string(handle) +
                                " is not a valid MPI communicator handle (MPI_Comm_c2f of a live communicator, or "
                                "the Fortran integer handle): " + std::string(text, static_cast<size_t>(length)));
  }
  return c;
}

}  // namespace

/// A group of every rank of MPI_COMM_WORLD (`size` 0: any size), or of the
/// communicator whose Fortran handle is `comm` (MPI_Comm_c2f) when `has_comm`.
FULGUR_MPI_EXPORT void fulgur_mpi_group(int has_comm, MPI_Fint comm, int rank, int size,
                                        c10::intrusive_ptr<c10d::Backend>& group) {
  if (has_comm != 0) require_initialised();
  const MPI_Comm c = has_comm != 0 ? communicator_of(comm) : MPI_COMM_WORLD;
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
  require_initialised();
  const MPI_Comm c = communicator_of(comm);
  if (c == MPI_COMM_NULL) return;
  MPI_Comm_rank(c, &layout[0]);
  MPI_Comm_size(c, &layout[1]);
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, layout[0], MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &layout[2]);
  MPI_Comm_size(node, &layout[3]);
  MPI_Comm_free(&node);
}

/// Background training beside a program whose own threads call MPI: fulgur's
/// engines and the program's threads call MPI at the same time, which only
/// MPI_THREAD_MULTIPLE allows (fulgur's own calls are serialised among
/// themselves, not with the program's).
FULGUR_MPI_EXPORT void fulgur_mpi_require_multiple(const std::string& who) {
  int initialised = 0, provided = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialised);
  if (initialised == 0) return;  // fulgur begins MPI itself, with MPI_THREAD_MULTIPLE
  MPI_Query_thread(&provided);
  if (provided >= MPI_THREAD_MULTIPLE) return;
  throw std::invalid_argument(who + " needs MPI_THREAD_MULTIPLE (fulgur's MPI calls run on its own threads while the "
                              "program's threads may call MPI), but the program's MPI provides " +
                              fulgur::mpi_thread_level_name(provided) +
                              ": MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), or train inline "
                              "(train_step) where MPI_THREAD_SERIALIZED is enough");
}
