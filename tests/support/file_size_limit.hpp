#pragma once

#include <sys/resource.h>

#include <csignal>
#include <stdexcept>

namespace fulgur::testing {

/// While alive, a write past `bytes` fails with EFBIG (SIGXFSZ ignored), as
/// on a full disk; the limit and the handler come back when it goes.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) throw std::runtime_error("getrlimit(RLIMIT_FSIZE) failed");
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved_;
    small.rlim_cur = bytes;
    if (::setrlimit(RLIMIT_FSIZE, &small) != 0) throw std::runtime_error("setrlimit(RLIMIT_FSIZE) failed");
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  struct rlimit saved_ {};
  void (*previous_handler_)(int) = nullptr;
};

}  // namespace fulgur::testing
