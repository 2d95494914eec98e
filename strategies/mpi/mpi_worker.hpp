#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fulgur {

/// The one thread of the process that calls MPI for fulgur, so
/// MPI_THREAD_SERIALIZED is all fulgur asks of a program's MPI. Every
/// operation is nonblocking (MPI_Iallreduce, MPI_Ibcast, MPI_Isend, ...):
/// the worker starts each in the order the program issued it, which per
/// communicator is the same order on every rank, and then polls them all.
/// No operation waits for another to finish, so groups used from several
/// threads (horovod's background thread beside the training thread) never
/// wait on each other crosswise, as they would with blocking calls on one
/// thread. The worker polls without pause while a caller waits for an
/// operation, and with growing pauses otherwise (backward's compute runs
/// while gradient buckets are in flight and needs the core).
class MpiWorker {
 public:
  /// Polls an operation in flight: true once it is complete (and has
  /// reported its outcome itself). Throwing counts as complete.
  using Poll = std::function<bool()>;

  /// The worker, started on first use; it lives until the program exits.
  static MpiWorker& instance();

  /// Queues an operation: on the worker, `begin` starts it (nonblocking MPI
  /// calls) and returns how to poll it; `failed` gets what `begin` or the
  /// poll threw.
  void start(std::function<Poll()> begin, std::function<void(std::exception_ptr)> failed);
  /// Runs a job on the worker thread and waits for it; rethrows what it threw.
  void run(const std::function<void()>& job);
  /// A caller starts (+1) or stops (-1) waiting for an operation.
  void waiting(int delta);

  /// A group was aborted (a run failed or a stop signal found this rank
  /// held in a collective): every operation in flight or queued fails at
  /// once, so whoever waits returns; MPI keeps the buffers it may still
  /// write into, and is left as it is at exit, so the launcher ends the
  /// other ranks.
  void abort();
  /// fulgur began MPI (on the worker thread): it ends it at exit.
  void mark_initialised_here();

 private:
  MpiWorker();
  void loop();
  /// Tests every operation in flight once; true when one finished.
  bool poll();
  bool aborted();
  void at_exit();
  static void at_exit_handler();

  std::mutex mutex_;
  std::condition_variable ready_;  // a job came, a caller waits, or the worker stops
  std::condition_variable idle_;   // a job has finished
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool busy_ = false;
  bool failed_ = false;
  bool initialised_here_ = false;
  std::atomic<int> waiters_{0};
  std::atomic<size_t> in_flight_count_{0};
  std::vector<std::pair<Poll, std::function<void(std::exception_ptr)>>> in_flight_;  // worker thread only
  std::vector<Poll> abandoned_;  // aborted operations: kept, since MPI may still use their buffers
  std::thread thread_;
};

}  // namespace fulgur
