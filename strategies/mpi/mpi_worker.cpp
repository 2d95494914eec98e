#include <fulgur/strategies/mpi/mpi_worker.hpp>

#include <algorithm>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

std::exception_ptr aborted_error() {
  return std::make_exception_ptr(std::runtime_error("[MpiProcessGroup] the group was aborted on this rank"));
}

}  // namespace

MpiWorker& MpiWorker::instance() {
  // Never destroyed: at_exit ends the thread (and MPI, when fulgur began it).
  static MpiWorker* worker = [] {
    auto* w = new MpiWorker();
    std::atexit(&MpiWorker::at_exit_handler);
    return w;
  }();
  return *worker;
}

MpiWorker::MpiWorker() : thread_([this] { loop(); }) {}

void MpiWorker::start(std::function<Poll()> begin, std::function<void(std::exception_ptr)> failed) {
  {
    const std::lock_guard lock(mutex_);
    jobs_.push_back([this, begin = std::move(begin), failed = std::move(failed)]() mutable {
      if (aborted()) {
        failed(aborted_error());
        return;
      }
      try {
        in_flight_.emplace_back(begin(), std::move(failed));
        in_flight_count_.store(in_flight_.size());
      } catch (...) {
        failed(std::current_exception());
      }
    });
  }
  ready_.notify_one();
}

void MpiWorker::run(const std::function<void()>& job) {
  std::promise<void> finished;
  auto result = finished.get_future();
  {
    const std::lock_guard lock(mutex_);
    jobs_.push_back([&] {
      try {
        job();
        finished.set_value();
      } catch (...) {
        finished.set_exception(std::current_exception());
      }
    });
  }
  ready_.notify_one();
  result.get();
}

void MpiWorker::waiting(int delta) {
  if (waiters_.fetch_add(delta) + delta > 0) {
    const std::lock_guard lock(mutex_);  // so the worker cannot miss the wake-up
    ready_.notify_one();
  }
}

void MpiWorker::abort() {
  {
    const std::lock_guard lock(mutex_);
    failed_ = true;
  }
  ready_.notify_one();
}


void MpiWorker::mark_initialised_here() {
  const std::lock_guard lock(mutex_);
  initialised_here_ = true;
}

bool MpiWorker::poll() {
  bool progressed = false;
  for (size_t i = 0; i < in_flight_.size();) {
    bool complete = true;
    std::exception_ptr error;
    try {
      complete = in_flight_[i].first();
    } catch (...) {
      error = std::current_exception();
    }
    if (!complete) {
      ++i;
      continue;
    }
    auto failed = std::move(in_flight_[i].second);
    in_flight_.erase(in_flight_.begin() + static_cast<std::ptrdiff_t>(i));
    in_flight_count_.store(in_flight_.size());
    if (error) failed(error);
    progressed = true;
  }
  if (progressed) idle_.notify_all();
  return progressed;
}

void MpiWorker::loop() {
  std::chrono::microseconds pause{0};
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      const auto wake = [this] { return stopping_ || failed_ || !jobs_.empty() || waiters_.load() > 0; };
      if (in_flight_.empty()) {
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      } else if (pause.count() > 0) {
        ready_.wait_for(lock, pause, wake);
      }
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
        busy_ = true;
      } else if (stopping_ && in_flight_.empty()) {
        return;
      }
    }
    if (job) {
      job();  // jobs catch their own errors (they end in a Work or a promise)
      const std::lock_guard lock(mutex_);
      busy_ = false;
      idle_.notify_all();
    }
    if (aborted() && !in_flight_.empty()) {
      for (auto& [poll_one, failed] : in_flight_) {
        failed(aborted_error());
        abandoned_.push_back(std::move(poll_one));
      }
      in_flight_.clear();
      in_flight_count_.store(0);
    }
    const bool progressed = poll();
    if (progressed || job || waiters_.load() > 0) {
      pause = std::chrono::microseconds(0);
      if (!job && !progressed && !in_flight_.empty()) std::this_thread::yield();
    } else {
      pause = std::min(std::chrono::microseconds(200), std::max(std::chrono::microseconds(10), pause * 2));
    }
  }
}

bool MpiWorker::aborted() {
  const std::lock_guard lock(mutex_);
  return failed_;
}

void MpiWorker::at_exit_handler() { instance().at_exit(); }

void MpiWorker::at_exit() {
  bool finalise = false;
  {
    std::unique_lock lock(mutex_);
    // The last job (a group's shutdown) may still be returning. Work still
    // in flight after that waits on a peer that may never come: leave the
    // thread and MPI as they are (the process ends; the launcher ends the rest).
    const auto idle = [this] { return !busy_ && jobs_.empty() && in_flight_count_.load() == 0; };
    idle_.wait_for(lock, std::chrono::seconds(2), idle);
    if (!idle() || failed_) {
      thread_.detach();
      return;
    }
    finalise = initialised_here_;
  }
  if (finalise) {
    // MPI ends on the thread that began it; a program that began MPI ends it itself.
    run([] {
      int finalised = 0;
      MPI_Finalized(&finalised);
      if (finalised == 0) MPI_Finalize();
    });
  }
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  thread_.join();
}

}  // namespace fulgur
