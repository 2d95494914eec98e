#pragma once
#include <cstddef>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace fulgur {

/// Buffers of the sizes send() asks for, kept when a message goes: a solver
/// sends the same shapes every time, and a buffer fresh from malloc costs a
/// page fault per page on the first copy (a large one is its own mapping),
/// more than the copy itself. Keeps at most kKeptBytes and kKeptBuffers.
class MessageBuffers {
 public:
  static constexpr size_t kKeptBytes = size_t{64} << 20, kKeptBuffers = 512;
  MessageBuffers() = default;
  MessageBuffers(const MessageBuffers&) = delete;
  MessageBuffers& operator=(const MessageBuffers&) = delete;
  ~MessageBuffers() {
    for (auto& [bytes, buffers] : kept_) {
      for (void* data : buffers) std::free(data);
    }
  }
  /// A buffer of `bytes`: a kept one, else a fresh one (std::bad_alloc when there is none).
  void* take(size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      auto it = kept_.find(bytes);
      if (it != kept_.end() && !it->second.empty()) {
        void* data = it->second.back();
        it->second.pop_back();
        kept_bytes_ -= bytes;
        --kept_buffers_;
        return data;
      }
    }
    void* data = std::malloc(bytes == 0 ? 1 : bytes);
    if (data == nullptr) throw std::bad_alloc();
    return data;
  }
  /// Takes `data` back: kept for the next take() of its size while within the bounds, else freed.
  void give(void* data, size_t bytes) {
    if (data == nullptr) return;
    {
      const std::lock_guard lock(mutex_);
      if (kept_bytes_ + bytes <= kKeptBytes && kept_buffers_ < kKeptBuffers) {
        kept_[bytes].push_back(data);
        kept_bytes_ += bytes;
        ++kept_buffers_;
        return;
      }
    }
    std::free(data);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> kept_;
  size_t kept_bytes_ = 0, kept_buffers_ = 0;
};

}  // namespace fulgur
