#include <fulgur/datamodules/loading/worker_pool.hpp>

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

// Makes the calling thread's tensor ops single-threaded, as PyTorch's
// DataLoader does in its worker processes (torch.set_num_threads(1)). Without
// it every worker thread starts its own OpenMP team of get_num_threads()
// threads, whose spin-waiting takes the cores from the training thread: an
// MLP epoch on 2 cores ran 16x slower. at::set_num_threads would change the
// whole process, so this sets only the thread's OpenMP team size. ATen's
// first parallel_for on a thread resets that size (lazy_init_num_threads,
// one copy per library), so one ATen op of exactly GRAIN_SIZE elements, too
// small to run in parallel, triggers that reset first. The OpenMP runtime is
// looked up in the process rather than linked, so this works with whichever
// one LibTorch was built with (libgomp, Intel's), and does nothing without one.
void use_one_intra_op_thread() {
  using SetNumThreads = void (*)(int);
  static const auto set_num_threads =
      reinterpret_cast<SetNumThreads>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set_num_threads == nullptr) return;
  at::empty({at::internal::GRAIN_SIZE}, at::kFloat).fill_(1);
  set_num_threads(1);
}

}  // namespace

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
  use_one_intra_op_thread();
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
