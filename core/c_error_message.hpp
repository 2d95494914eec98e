#pragma once

#include <mutex>
#include <string>

namespace fulgur {

/// The message of a C handle's last failed call (as sqlite3_errmsg keeps
/// one per connection): any thread may set it while another reads it.
class CErrorMessage {
 public:
  void set(std::string message) {
    const std::lock_guard lock(mutex_);
    message_ = std::move(message);
  }

  /// A copy in the calling thread's buffer, so another thread's failure
  /// cannot change it under the caller: valid until this thread's next text().
  const char* text() const {
    thread_local std::string copy;
    const std::lock_guard lock(mutex_);
    copy = message_;
    return copy.c_str();
  }

 private:
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace fulgur
