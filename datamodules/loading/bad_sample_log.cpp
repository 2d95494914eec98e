#include <fulgur/datamodules/loading/bad_sample_log.hpp>

#include <iostream>

namespace fulgur {

bool BadSampleLog::record(int64_t index, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reasons_.emplace(index, reason).second) return false;
  // One line per file, written under the lock so lines never interleave.
  std::cerr << "fulgur: skipping bad sample " << index << ": " << reason << std::endl;
  return true;
}

bool BadSampleLog::is_bad(int64_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reasons_.count(index) != 0;
}

int64_t BadSampleLog::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(reasons_.size());
}

std::string BadSampleLog::reason(int64_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = reasons_.find(index);
  return it == reasons_.end() ? "" : it->second;
}

}  // namespace fulgur
