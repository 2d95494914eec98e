#include <fulgur/strategies/mpi/mpi_engine.hpp>

#include <algorithm>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;

/// How long the engine polls without sleeping after the last progress while
/// a caller waits: a collective on one node, or a ring's next segment, moves
/// within it (with 200 µs a 64 MB all-reduce lost a third of its rate).
constexpr microseconds kSpin{2000};
/// Sleeps between tests grow from this...
constexpr microseconds kFirstPause{20};
/// ...to this, and to kLongPause once nothing has moved for kLongIdle.
constexpr microseconds kPause{200};
constexpr microseconds kLongPause{5000};
constexpr auto kLongIdle = std::chrono::milliseconds(100);
/// A yield that kept the core away this long gave it to other work: on a
/// busy machine each yield hands a whole time slice to another program, so
/// the engine sleeps its pauses instead (a sleeper is woken ahead of busy
/// work) and tries spinning again after kBusyFor. 2 ranks beside 2 busy
/// loops on 2 cores: the ensemble example's 3000 steps took 56 s spinning,
/// 22 s sleeping.
constexpr microseconds kBusyYield{500};
constexpr auto kBusyFor = std::chrono::seconds(1);
/// What stop() waits for operations still in flight.
constexpr auto kStopGrace = std::chrono::seconds(5);

std::exception_ptr aborted_error() {
  return std::make_exception_ptr(std::runtime_error("[MpiProcessGroup] the group was aborted on this rank"));
}

/// Polls of abandoned operations: they hold the buffers MPI may still write
/// into, so they outlive their engine (never freed, on purpose).
void keep_forever(std::vector<MpiEngine::Poll> polls) {
  static std::mutex mutex;
  static auto* kept = new std::vector<MpiEngine::Poll>();
  const std::lock_guard lock(mutex);
  for (auto& poll : polls) kept->push_back(std::move(poll));
}

}  // namespace

MpiEngine::MpiEngine(std::shared_ptr<MpiSession> session)
    : session_(std::move(session)), thread_([this] { loop(); }) {}

MpiEngine::~MpiEngine() { stop(); }

void MpiEngine::start(std::function<Poll()> begin, std::function<void(std::exception_ptr)> failed) {
  {
    const std::lock_guard lock(mutex_);
    if (!stopping_) {
      jobs_.push_back([this, begin = std::move(begin), failed = std::move(failed)]() mutable {
        if (aborted()) {
          failed(aborted_error());
          return;
        }
        try {
          in_flight_.emplace_back(begin(), std::move(failed));
        } catch (...) {
          failed(std::current_exception());
        }
      });
      ready_.notify_one();
      return;
    }
  }
  failed(std::make_exception_ptr(std::logic_error("[MpiProcessGroup] the group was shut down")));
}

void MpiEngine::run(const std::function<void()>& job) {
  std::promise<void> finished;
  auto result = finished.get_future();
  {
    const std::lock_guard lock(mutex_);
    if (stopping_) throw std::logic_error("[MpiProcessGroup] the group was shut down");
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

void MpiEngine::waiting(int delta) {
  if (waiters_.fetch_add(delta) + delta > 0) {
    const std::lock_guard lock(mutex_);  // so the engine cannot miss the wake-up
    ready_.notify_one();
  }
}

void MpiEngine::abort() {
  {
    const std::lock_guard lock(mutex_);
    failed_ = true;
  }
  session_->keep_unfinalised();
  ready_.notify_one();
}

bool MpiEngine::aborted() {
  const std::lock_guard lock(mutex_);
  return failed_;
}

void MpiEngine::stop() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool MpiEngine::poll() {
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
    if (error) failed(error);
    progressed = true;
  }
  return progressed;
}

void MpiEngine::abandon(const std::exception_ptr& error) {
  std::vector<Poll> polls;
  for (auto& [poll_one, failed] : in_flight_) {
    failed(error);
    polls.push_back(std::move(poll_one));
  }
  in_flight_.clear();
  keep_forever(std::move(polls));
}

void MpiEngine::loop() {
  auto last_progress = Clock::now();
  Clock::time_point busy_until{};
  microseconds pause{0};
  std::optional<Clock::time_point> stop_by;
  for (;;) {
    std::function<void()> job;
    bool failed = false, stopping = false;
    {
      std::unique_lock lock(mutex_);
      if (in_flight_.empty()) {
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      } else if (pause.count() > 0) {
        ready_.wait_for(lock, pause, [this] { return stopping_ || failed_ || !jobs_.empty(); });
      }
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else if (stopping_ && in_flight_.empty()) {
        return;
      }
      failed = failed_;
      stopping = stopping_;
    }
    if (stopping && !stop_by) stop_by = Clock::now() + kStopGrace;
    bool progressed = false;
    {
      const std::lock_guard calls(session_->calls());
      if (job) job();  // jobs catch their own errors (they end in a Work or a promise)
      if (failed && !in_flight_.empty()) {
        abandon(aborted_error());
      } else if (stop_by && Clock::now() > *stop_by && !in_flight_.empty()) {
        session_->keep_unfinalised();
        abandon(std::make_exception_ptr(
            std::runtime_error("[MpiProcessGroup] the group was shut down with this operation still in flight")));
      }
      progressed = poll();
    }
    const auto now = Clock::now();
    if (progressed || job) {
      last_progress = now;
      pause = microseconds(0);
    } else if (waiters_.load() > 0 && now - last_progress < kSpin && now >= busy_until) {
      pause = microseconds(0);
      std::this_thread::yield();
      const auto after = Clock::now();
      if (after - now > kBusyYield) busy_until = after + kBusyFor;
    } else {
      const microseconds cap = now - last_progress > kLongIdle ? kLongPause : kPause;
      pause = std::clamp(pause * 2, kFirstPause, cap);
    }
  }
}

}  // namespace fulgur
