#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fulgur {

/// A fixed set of threads running queued tasks in submission order. The
/// DatasetLoader's workers: one pool per iterator, or one per loader kept
/// across epochs with persistent_workers. Destroying the pool drops the
/// tasks not started yet and joins the threads after their current task.
class WorkerPool {
 public:
  /// Starts `num_threads` (>= 1) threads.
  explicit WorkerPool(int64_t num_threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  /// Queues a task. It must not throw: exceptions belong in the result it
  /// hands to its consumer.
  void submit(std::function<void()> task);
  int64_t num_threads() const { return static_cast<int64_t>(threads_.size()); }

 private:
  void run();
  void shutdown();

  std::mutex mutex_;
  std::condition_variable queued_cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace fulgur
