#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

namespace fulgur::testing {

/// The threads of this process at one moment (/proc/self/task), to tell which
/// threads appeared since. Ids rather than a count: pthread_join returns once
/// a thread has exited but before the kernel releases it, so a thread joined
/// just before (an earlier case's) can stay listed a moment, longer on a busy
/// machine, and a count taken then is one too high.
class ThreadSnapshot {
 public:
  ThreadSnapshot() : ids_(current()) {}

  /// How many threads alive now were not in the snapshot, once there are
  /// `expected` of them or after 5 s: a thread joined since leaves the list
  /// a moment after its join, a leaked one stays.
  int64_t new_threads(int64_t expected = 0) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int64_t count = count_new();
    while (count != expected && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      count = count_new();
    }
    return count;
  }

 private:
  static std::set<std::string> current() {
    std::set<std::string> ids;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
      ids.insert(entry.path().filename().string());
    }
    return ids;
  }
  int64_t count_new() const {
    int64_t count = 0;
    for (const auto& id : current()) count += ids_.count(id) == 0 ? 1 : 0;
    return count;
  }

  std::set<std::string> ids_;
};

}  // namespace fulgur::testing
