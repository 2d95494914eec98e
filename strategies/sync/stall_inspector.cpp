#include <fulgur/strategies/sync/stall_inspector.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

StallInspector::StallInspector(Options options) : options_(options) {
  if (!(options_.warning_s > 0)) {
    throw std::invalid_argument(
        fmt::format("[StallInspector::StallInspector] warning_s must be > 0, got {}", options_.warning_s));
  }
  if (options_.shutdown_s && !(*options_.shutdown_s > 0)) {
    throw std::invalid_argument(
        fmt::format("[StallInspector::StallInspector] shutdown_s must be > 0, got {}", *options_.shutdown_s));
  }
}

StallInspector::Report StallInspector::check(const std::vector<int64_t>& submitted, Clock::time_point now,
                                             const std::function<std::string(int64_t)>& tensor_name) {
  if (submitted.empty()) return {};
  const auto [low, high] = std::minmax_element(submitted.begin(), submitted.end());
  if (*low == *high) {  // nobody waits for anybody
    stalled_since_.reset();
    warned_ = false;
    return {};
  }
  if (!stalled_since_ || *low != slowest_) {  // the slowest rank moved: a new wait starts
    stalled_since_ = now;
    slowest_ = *low;
    warned_ = false;
  }
  const double waited = std::chrono::duration<double>(now - *stalled_since_).count();
  const bool shutdown = options_.shutdown_s && waited >= *options_.shutdown_s;
  if (!shutdown && (waited < options_.warning_s || warned_)) return {};
  warned_ = true;

  std::vector<int64_t> missing, waiting;
  for (size_t r = 0; r < submitted.size(); ++r) {
    (submitted[r] == *low ? missing : waiting).push_back(static_cast<int64_t>(r));
  }
  std::string message = fmt::format(
      "[StallInspector] ranks [{}] have not submitted tensor '{}' for reduction; ranks [{}] have been waiting for it "
      "for {:.1f} s (ranks doing different steps, or one is stuck)",
      fmt::join(missing, ", "), tensor_name(*low), fmt::join(waiting, ", "), waited);
  if (shutdown) {
    message += fmt::format("; shutting down after stall_shutdown_s = {}", *options_.shutdown_s);
    return {Verdict::Shutdown, message};
  }
  return {Verdict::Warn, message};
}

}  // namespace fulgur
