#include <fulgur/strategies/collectives/stall_inspector.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace fulgur {

StallInspector::StallInspector(const HorovodOptions& options)
    : warning_s_(options.stall_warning_s()), shutdown_s_(options.stall_shutdown_s()) {
  validate_options(options);
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
  const bool shutdown = shutdown_s_ && waited >= *shutdown_s_;
  if (!shutdown && (waited < warning_s_ || warned_)) return {};
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
    message += fmt::format("; shutting down after stall_shutdown_s = {}", *shutdown_s_);
    return {Verdict::Shutdown, message};
  }
  return {Verdict::Warn, message};
}

}  // namespace fulgur
