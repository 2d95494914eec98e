#pragma once

#include <fulgur/core/ignored_signal.hpp>

#include <csignal>
#include <cstdint>
#include <optional>

namespace fulgur {

/// The process-wide state a run changes — LibTorch's thread count,
/// deterministic algorithms, cuDNN's benchmark mode, and SIGPIPE ignored
/// while the run's process group may write to a dead peer's socket (the
/// write then fails with EPIPE and names the rank instead of killing the
/// process) — set on entry and put back exactly as it was when the run ends,
/// on every path out. Held by every run and only while it runs: the
/// Trainer's fit, validate, test and predict; a Fabric from setup() to its
/// end; each inline OnlineTrainer::train_step (and the online trainer's
/// set-up and checkpoint calls); a background training thread for its life.
/// What the program set itself before and after is its own. Runs that
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

 private:
  // Counted by IgnoredSignal itself, so overlapping runs restore in any order.
  IgnoredSignal sigpipe_{SIGPIPE};
};

}  // namespace fulgur
