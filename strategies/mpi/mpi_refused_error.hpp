#pragma once

#include <stdexcept>

namespace fulgur {

/// MPI refused what a run asked of it: a communicator that is MPI_COMM_NULL
/// or not a valid handle, a thread level too low, MPI not initialised or
/// already finalised, ranks that MPI numbers otherwise than the run. The C
/// API reports it as FULGUR_MPI_ERROR.
class MpiRefusedError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

}  // namespace fulgur
