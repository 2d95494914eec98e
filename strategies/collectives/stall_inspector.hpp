#pragma once

#include <fulgur/strategies/options/horovod_options.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// Watches how far each rank has got in submitting gradients for reduction
/// (a running count per rank, exchanged every negotiation cycle). When some
/// ranks have submitted tensors that others have not, and the slowest rank
/// has not moved for `stall_warning_s`, it reports which ranks are missing which
/// tensor and which ranks wait for it; after `stall_shutdown_s` (if set) it asks
/// for the run to stop. A rank that is merely slower resets the clock each
/// time it submits something.
class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Verdict { Ok, Warn, Shutdown };
  struct Report {
    Verdict verdict = Verdict::Ok;
    std::string message;
  };

  /// Reads the horovod section's stall_warning_s and stall_shutdown_s.
  explicit StallInspector(const HorovodOptions& options);

  /// `submitted[r]` is how many tensors rank r has submitted so far;
  /// `tensor_name(i)` names the i-th tensor of that running count. Warns at
  /// most once per stall.
  Report check(const std::vector<int64_t>& submitted, Clock::time_point now,
               const std::function<std::string(int64_t)>& tensor_name);

 private:
  double warning_s_;
  std::optional<double> shutdown_s_;
  std::optional<Clock::time_point> stalled_since_;
  int64_t slowest_ = -1;
  bool warned_ = false;
};

}  // namespace fulgur
