#include <fulgur/datamodules/worker_pool.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

WorkerPool::WorkerPool(int64_t num_threads) {
  if (num_threads < 1) {
    throw std::invalid_argument("[WorkerPool::WorkerPool] num_threads must be >= 1, got " + std::to_string(num_threads));
  }
  threads_.reserve(static_cast<size_t>(num_threads));
  try {
    for (int64_t i = 0; i < num_threads; ++i) threads_.emplace_back([this] { run(); });
  } catch (...) {
    shutdown();  // join the threads that did start
    throw;
  }
}

WorkerPool::~WorkerPool() { shutdown(); }

void WorkerPool::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  queued_cv_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void WorkerPool::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;
    queue_.push_back(std::move(task));
  }
  queued_cv_.notify_one();
}

void WorkerPool::run() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

}  // namespace fulgur
