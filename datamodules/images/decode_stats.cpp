#include <fulgur/datamodules/images/decode_stats.hpp>

#include <utility>

namespace fulgur {

DecodeStats::DecodeStats(std::string where) : where_(std::move(where)) {}

bool DecodeStats::record(int64_t epoch, const DecodeCounts& batch) {
  std::lock_guard<std::mutex> lock(mutex_);
  Epoch& e = epochs_[epoch];
  e.counts += batch;
  ++e.batches;
  run_ += batch;
  ++run_batches_;
  last_batch_ = batch;
  if (batch.fallback == 0 || e.warned) return false;
  e.warned = true;
  return true;
}

std::string DecodeStats::finish_epoch(int64_t epoch) {
  Epoch e;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = epochs_.find(epoch); it != epochs_.end()) {
      e = it->second;
      epochs_.erase(it);
    }
  }
  return "decode on " + where_ + ", epoch " + std::to_string(epoch) + ": " + std::to_string(e.counts.total()) +
         " images in " + std::to_string(e.batches) + " batches: " + e.counts.to_string();
}

DecodeCounts DecodeStats::run() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return run_;
}

int64_t DecodeStats::run_batches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return run_batches_;
}

DecodeCounts DecodeStats::epoch(int64_t epoch) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = epochs_.find(epoch);
  return it == epochs_.end() ? DecodeCounts{} : it->second.counts;
}

DecodeCounts DecodeStats::last_batch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_batch_;
}

}  // namespace fulgur
