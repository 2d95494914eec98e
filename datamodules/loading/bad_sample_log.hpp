#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fulgur {

/// The samples a loader skipped with skip_bad_samples: each is reported on
/// stderr once, the first time it fails, and counted. Shared by the loader's
/// worker threads, so every method is thread-safe.
class BadSampleLog {
 public:
  /// Records that sample `index` failed with `reason` (which names the file).
  /// Returns true the first time this index is recorded.
  bool record(int64_t index, const std::string& reason);
  /// Whether `index` is known to be bad (so it is not decoded again).
  bool is_bad(int64_t index) const;
  /// Distinct bad samples recorded so far.
  int64_t count() const;
  /// The reason recorded for `index`, or "" if it is not known to be bad.
  std::string reason(int64_t index) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, std::string> reasons_;
};

}  // namespace fulgur
