#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/torch.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace fulgur {

/// A thread that reduces arrived segments for the MPI rings (MpiRingAllreduce,
/// MpiRingReduceScatter), so the MPI
/// thread (MpiWorker) keeps moving bytes meanwhile instead of adding them.
/// Calls no MPI. Started on first use; ends with the program.
class MpiReducer {
 public:
  static MpiReducer& instance();
  /// Queues `job`; the returned flag turns true once it has run.
  std::shared_ptr<std::atomic<bool>> submit(std::function<void()> job);
  /// into op= from, elementwise (SUM, PRODUCT, MIN or MAX; same type and
  /// size, contiguous). A plain loop: tensor arithmetic would start
  /// LibTorch's intra-op threads, which the ranks' own compute needs.
  static void combine(c10d::ReduceOp::RedOpType op, at::Tensor into, const at::Tensor& from);

 private:
  MpiReducer();
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<std::atomic<bool>>>> jobs_;
  std::thread thread_;
};

}  // namespace fulgur
