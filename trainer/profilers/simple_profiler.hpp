#pragma once

#include <fulgur/trainer/profilers/profiler.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace fulgur {

/// `profiler: simple` (Lightning's SimpleProfiler): the number of calls,
/// mean and total wall time of every action, as a table in
/// `<run>/profile.txt` (`profile-rank<r>.txt` on the other ranks), printed
/// by rank 0 at the end of each stage. Totals cover the Trainer's life.
class SimpleProfiler : public Profiler {
 public:
  struct Entry {
    int64_t calls = 0;
    double total_s = 0.0;
  };

  void start(const std::string& action) override;
  void stop(const std::string& action) override;
  std::filesystem::path write(const std::filesystem::path& dir, int64_t rank) override;

  const std::map<std::string, Entry>& entries() const { return entries_; }
  /// The report: one row per action, slowest total first.
  std::string report() const;

 private:
  using Clock = std::chrono::steady_clock;
  // Actions nest (a hook inside run_training_batch): a stack per name.
  std::map<std::string, std::vector<Clock::time_point>> started_;
  std::map<std::string, Entry> entries_;
  Clock::time_point created_ = Clock::now();
};

}  // namespace fulgur
