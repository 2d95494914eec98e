// StallInspector's decisions from per-rank submission counts and a clock.
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <fulgur/strategies/collectives/stall_inspector.hpp>

namespace stall_inspector_test {

using fulgur::HorovodOptions;
using fulgur::StallInspector;

namespace {

std::string name_of(int64_t i) { return "tensor" + std::to_string(i); }

}  // namespace

TEST_CASE("stall inspector: warns once per stall, naming missing and waiting ranks, then shuts down") {
  StallInspector inspector(HorovodOptions().stall_warning_s(2.0).stall_shutdown_s(5.0));
  const auto t0 = StallInspector::Clock::now();
  auto at = [&](double s) { return t0 + std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  CHECK((inspector.check({4, 4, 4}, at(0), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({8, 4, 8}, at(0.5), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({8, 4, 8}, at(2.0), name_of).verdict == StallInspector::Verdict::Ok));
  const auto warn = inspector.check({8, 4, 8}, at(2.6), name_of);
  CHECK((warn.verdict == StallInspector::Verdict::Warn));
  CHECK(warn.message ==
        "[StallInspector] ranks [1] have not submitted tensor 'tensor4' for reduction; ranks [0, 2] have been "
        "waiting for it for 2.1 s (ranks doing different steps, or one is stuck)");
  CHECK((inspector.check({8, 4, 8}, at(3.0), name_of).verdict == StallInspector::Verdict::Ok));  // said once
  const auto stop = inspector.check({8, 4, 8}, at(5.6), name_of);
  CHECK((stop.verdict == StallInspector::Verdict::Shutdown));
  CHECK(stop.message.find("; shutting down after stall_shutdown_s = 5") != std::string::npos);
}

TEST_CASE("stall inspector: a slow rank that keeps submitting resets the clock") {
  StallInspector inspector(HorovodOptions().stall_warning_s(1.0));
  const auto t0 = StallInspector::Clock::now();
  auto at = [&](double s) { return t0 + std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  CHECK((inspector.check({8, 4}, at(0), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({8, 5}, at(0.8), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({8, 6}, at(1.6), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({8, 8}, at(2.4), name_of).verdict == StallInspector::Verdict::Ok));
  // Without shutdown_s a long stall only warns.
  CHECK((inspector.check({12, 8}, at(3.0), name_of).verdict == StallInspector::Verdict::Ok));
  CHECK((inspector.check({12, 8}, at(100.0), name_of).verdict == StallInspector::Verdict::Warn));
  CHECK((inspector.check({12, 8}, at(200.0), name_of).verdict == StallInspector::Verdict::Ok));
}

TEST_CASE("stall inspector: bad options are rejected by name") {
  CHECK_THROWS_WITH_AS(StallInspector(HorovodOptions().stall_warning_s(0.0)),
                       "[HorovodOptions] stall_warning_s must be > 0, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(StallInspector(HorovodOptions().stall_shutdown_s(-1.0)),
                       "[HorovodOptions] stall_shutdown_s must be > 0, got -1", std::invalid_argument);
}

}  // namespace stall_inspector_test
