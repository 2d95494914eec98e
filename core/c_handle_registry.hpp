#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>

namespace fulgur {

/// The live handles of one of fulgur's C libraries (docs/c-abi.md): a
/// handle is a pointer the library made and has not destroyed. `find` hands
/// out a reference, so a destroy on another thread frees the handle only
/// when the last call that found it returns (never a use-after-free); a
/// destroyed or foreign pointer is never followed. Header-only: the client
/// library links nothing of fulgur.
template <class Handle>
class CHandleRegistry {
 public:
  /// Registers `handle`; the pointer the C caller holds from now on.
  Handle* add(std::shared_ptr<Handle> handle) {
    Handle* raw = handle.get();
    const std::lock_guard lock(mutex_);
    live_.emplace(raw, std::move(handle));
    return raw;
  }

  /// The live handle `handle` points to, or null.
  std::shared_ptr<Handle> find(const Handle* handle) const {
    const std::lock_guard lock(mutex_);
    const auto found = live_.find(handle);
    return found == live_.end() ? nullptr : found->second;
  }

  /// The message of the last failed call on `handle` (its CErrorMessage
  /// `error`), or `not_live` when it is not a live handle.
  const char* message_of(const Handle* handle, const char* not_live) const {
    const std::shared_ptr<Handle> live = find(handle);
    return live == nullptr ? not_live : live->error.text();
  }

  /// Takes `handle` out (later finds answer null) and returns it, or null
  /// when it was not live; it is freed when the last reference goes.
  std::shared_ptr<Handle> remove(const Handle* handle) {
    const std::lock_guard lock(mutex_);
    const auto found = live_.find(handle);
    if (found == live_.end()) return nullptr;
    std::shared_ptr<Handle> taken = std::move(found->second);
    live_.erase(found);
    return taken;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const Handle*, std::shared_ptr<Handle>> live_;
};

}  // namespace fulgur
