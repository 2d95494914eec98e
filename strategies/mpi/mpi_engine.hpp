#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <fulgur/strategies/mpi/mpi_reducer.hpp>
#include <fulgur/strategies/mpi/mpi_session.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fulgur {

/// One process group's MPI thread (and its ring reducer), started with the
/// group and joined when the group shuts down. Every operation is
/// nonblocking (MPI_Iallreduce, MPI_Ibcast, MPI_Isend, ...): the engine
/// starts each in the order the program issued it, which per communicator
/// is the same order on every rank, then tests them all, so operations never
/// wait on each other crosswise. Between tests it sleeps, longer the longer
/// nothing has moved (up to 200 µs, then 5 ms after 100 ms): a rank held
/// behind a straggler uses no core, while a caller waiting for an operation
/// that moves gets polling without sleep for 2 ms after each progress. Every MPI
/// call goes through the session's calls() lock, so groups on several
/// threads need no more than MPI_THREAD_SERIALIZED of the program's MPI.
class MpiEngine {
 public:
  /// Polls an operation in flight: true once it is complete (and has
  /// reported its outcome itself). Throwing counts as complete.
  using Poll = std::function<bool()>;

  explicit MpiEngine(std::shared_ptr<MpiSession> session);
  ~MpiEngine();
  MpiEngine(const MpiEngine&) = delete;
  MpiEngine& operator=(const MpiEngine&) = delete;

  /// Queues an operation: on the engine, `begin` starts it (nonblocking MPI
  /// calls) and returns how to poll it; `failed` gets what `begin` or the
  /// poll threw.
  void start(std::function<Poll()> begin, std::function<void(std::exception_ptr)> failed);
  /// Runs a job on the engine's thread and waits for it; rethrows what it threw.
  void run(const std::function<void()>& job);
  /// A caller starts (+1) or stops (-1) waiting for an operation.
  void waiting(int delta);

  /// The group was aborted (a run failed, or a stop signal found this rank
  /// held in a collective): its operations in flight or queued fail at
  /// once, so whoever waits returns. Their buffers are kept (MPI may still
  /// write into them) and MPI is left unfinalised. Other groups go on.
  void abort();
  bool aborted();
  /// Runs what is queued, waits (at most a few seconds) for what is in
  /// flight, and joins the thread; an operation still in flight then fails
  /// as if aborted. Idempotent.
  void stop();

  MpiReducer& reducer() { return reducer_; }
  std::shared_ptr<MpiSession> shared_session() const { return session_; }

 private:
  void loop();
  /// Tests every operation in flight once; true when one finished.
  bool poll();
  /// Fails every operation in flight, keeping what it holds.
  void abandon(const std::exception_ptr& error);

  std::shared_ptr<MpiSession> session_;
  MpiReducer reducer_;
  std::mutex mutex_;
  std::condition_variable ready_;  // a job came, a caller waits, abort, or stop
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool failed_ = false;
  std::atomic<int> waiters_{0};
  std::vector<std::pair<Poll, std::function<void(std::exception_ptr)>>> in_flight_;  // engine thread only
  std::thread thread_;
};

}  // namespace fulgur
