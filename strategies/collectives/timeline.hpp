#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>

namespace fulgur {

/// A Chrome-trace file (the JSON array format chrome://tracing and Perfetto
/// load) of the collectives one rank runs: one complete ("X") event per
/// phase of each collective (queue, copy-in, reduce-scatter / all-gather or
/// allreduce, copy-out), with the rank as the process id so that the files
/// of several ranks can be merged into one view. Events are written as they
/// happen (thread-safe); the array is closed by the destructor. Timestamps
/// are wall-clock microseconds, comparable between ranks on one machine.
class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  /// Opens `path` for writing (its folder must exist); throws naming the path.
  Timeline(const std::string& path, int64_t rank);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Appends one event: `phase` of collective number `collective`, which
  /// covers `tensors` (a short description) and `bytes` bytes.
  void record(const std::string& phase, int64_t collective, const std::string& tensors, int64_t bytes,
              Clock::time_point start, Clock::time_point end);

  /// The file rank `rank` writes for the user's `path`: `path` itself on
  /// rank 0, `<stem>.rank<r><extension>` beside it on the others.
  static std::string path_for_rank(const std::string& path, int64_t rank);

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t rank_;
  std::ofstream out_;
  std::mutex mutex_;
  bool first_ = true;
  // Maps steady-clock points to wall-clock microseconds.
  Clock::time_point steady_origin_;
  int64_t wall_origin_us_;
};

}  // namespace fulgur
