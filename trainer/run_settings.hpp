#pragma once

#include <cstdint>
#include <optional>
#include <utility>

namespace fulgur {

/// The LibTorch settings a run changes — the thread count, deterministic
/// algorithms, cuDNN's benchmark mode — set on entry and put back exactly
/// as they were when it ends, on every path out. The Trainer holds one per
/// run (fit, validate, test, predict), the online trainer one per training
/// run; what the program set itself before and after is its own.
class RunSettings {
 public:
  struct Wanted {
    /// Threads for LibTorch's intra-op pool (none: keep the program's).
    std::optional<int64_t> num_threads;
    /// Deterministic algorithms only (none: keep the program's).
    std::optional<bool> deterministic;
    /// cuDNN's benchmark mode (none: keep the program's).
    std::optional<bool> cudnn_benchmark;
  };

  explicit RunSettings(const Wanted& wanted);
  ~RunSettings();
  RunSettings(const RunSettings&) = delete;
  RunSettings& operator=(const RunSettings&) = delete;

 private:
  std::optional<int> num_threads_;
  std::optional<std::pair<bool, bool>> deterministic_;  // enabled, warn_only
  std::optional<bool> cudnn_benchmark_;
};

}  // namespace fulgur
