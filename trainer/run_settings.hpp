#pragma once

#include <cstdint>
#include <optional>

namespace fulgur {

/// The LibTorch settings a run changes — the thread count, deterministic
/// algorithms, cuDNN's benchmark mode — set on entry and put back exactly
/// as they were when it ends, on every path out. The Trainer holds one per
/// run (fit, validate, test, predict), the online trainer one per training
/// run; what the program set itself before and after is its own. Runs that
/// overlap (on several threads) share one count, as StopSignals do: a
/// setting keeps the program's value from before the first run that changed
/// it, the latest run's value holds while runs overlap, and the last run to
/// end, in whatever order, puts the program's values back.
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
};

}  // namespace fulgur
