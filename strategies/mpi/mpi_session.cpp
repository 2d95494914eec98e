#include <fulgur/strategies/mpi/mpi_session.hpp>

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace fulgur {

const char* mpi_thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown thread level";
  }
}

std::shared_ptr<MpiSession> MpiSession::acquire() {
  static std::mutex mutex;
  static std::weak_ptr<MpiSession> current;
  const std::lock_guard lock(mutex);
  if (auto held = current.lock()) return held;
  std::shared_ptr<MpiSession> session(new MpiSession());
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (finalised != 0) {
    throw std::invalid_argument(
        "[MpiProcessGroup] MPI was finalised already (by the program, or by fulgur when the last MPI group of its "
        "runs ended): MPI cannot begin twice in one process; a program that makes several MPI runs one after "
        "another initialises MPI itself before the first (MPI_Init_thread with MPI_THREAD_MULTIPLE) and "
        "finalises it after the last");
  }
  if (initialised == 0) {
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
      throw std::runtime_error("[MpiProcessGroup] MPI_Init_thread failed");
    }
    session->initialised_here_ = true;
    session->provided_ = provided;
  } else {
    MPI_Query_thread(&session->provided_);
  }
  if (session->provided_ < MPI_THREAD_SERIALIZED) {
    const std::string level = mpi_thread_level_name(session->provided_);
    throw std::invalid_argument(
        "[MpiProcessGroup] the program initialised MPI with " + level +
        "; fulgur calls MPI from threads of its own and needs MPI_THREAD_SERIALIZED, or MPI_THREAD_MULTIPLE where the "
        "program's own threads call MPI while fulgur trains in the background "
        "(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided))");
  }
  current = session;
  return session;
}

void MpiSession::keep_unfinalised() { keep_.store(true); }

MpiSession::~MpiSession() {
  if (!initialised_here_ || keep_.load()) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised == 0) MPI_Finalize();
}

}  // namespace fulgur
