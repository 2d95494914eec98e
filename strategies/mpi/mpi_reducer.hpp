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

/// A thread that reduces arrived segments for one group's MPI rings
/// (MpiRingAllreduce, MpiRingReduceScatter), so the group's engine
/// (MpiEngine) keeps moving bytes meanwhile instead of adding them. Calls
/// no MPI. Started with its engine, joined when the engine stops.
class MpiReducer {
 public:
  MpiReducer();
  /// Runs the jobs queued so far, then joins the thread.
  ~MpiReducer();
  MpiReducer(const MpiReducer&) = delete;
  MpiReducer& operator=(const MpiReducer&) = delete;

  /// Queues `job`; the returned flag turns true once it has run.
  std::shared_ptr<std::atomic<bool>> submit(std::function<void()> job);
  /// into op= from, elementwise (SUM, PRODUCT, MIN or MAX; same type and
  /// size, contiguous). A plain loop: tensor arithmetic would start
  /// LibTorch's intra-op threads, which the ranks' own compute needs.
  static void combine(c10d::ReduceOp::RedOpType op, at::Tensor into, const at::Tensor& from);

 private:
  void loop();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<std::atomic<bool>>>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fulgur
