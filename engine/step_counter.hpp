#pragma once

#include <atomic>
#include <cstdint>

namespace fulgur {

/// The one count of optimizer steps, for every front end: the Trainer's
/// loops and manual optimization (through RunContext), Fabric, and the
/// OnlineTrainer (its Fabric's). StepEngine::after_optimizer_step is the
/// only caller of count(). Atomic because the online trainer's training
/// thread counts while the program's threads read it (global_step(),
/// predict()).
class StepCounter {
 public:
  StepCounter() = default;
  StepCounter(const StepCounter&) = delete;
  StepCounter& operator=(const StepCounter&) = delete;

  /// Optimizer steps taken so far.
  int64_t value() const { return steps_.load(std::memory_order_acquire); }
  /// One more step taken; returns the new count.
  int64_t count() { return steps_.fetch_add(1, std::memory_order_acq_rel) + 1; }
  /// A checkpoint's count (resume, load).
  void restore(int64_t steps) { steps_.store(steps, std::memory_order_release); }

 private:
  std::atomic<int64_t> steps_{0};
};

}  // namespace fulgur
