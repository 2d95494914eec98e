#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <atomic>
#include <memory>
#include <mutex>

namespace fulgur {

/// The process's MPI as fulgur's groups hold it. The first group of a run
/// initialises MPI when the program has not (MPI_THREAD_MULTIPLE); the last
/// one to let go finalises it, if fulgur initialised it and no group was
/// aborted (an aborted group's peers may never answer, and MPI may still
/// write into its buffers). A program that began MPI itself ends it itself.
/// fulgur's own MPI calls (every group's engine) go one at a time through
/// calls(), so the program's MPI needs MPI_THREAD_SERIALIZED for them.
class MpiSession {
 public:
  /// The session every live group shares; begins one when none is held.
  static std::shared_ptr<MpiSession> acquire();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  /// The thread level MPI provides (MPI_THREAD_*).
  int thread_level() const { return provided_; }
  /// fulgur initialised MPI (and so finalises it).
  bool initialised_here() const { return initialised_here_; }
  /// Held around every MPI call of fulgur's threads.
  std::mutex& calls() { return calls_; }
  /// A group was aborted: MPI is left as it is when the session ends.
  void keep_unfinalised();

 private:
  MpiSession() = default;
  int provided_ = 0;
  bool initialised_here_ = false;
  std::atomic<bool> keep_{false};
  std::mutex calls_;
};

/// The name of an MPI thread level, for messages.
const char* mpi_thread_level_name(int level);

}  // namespace fulgur
