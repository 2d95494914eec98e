// The ensemble under load: resends paced by the round trips each client
// measures (ResendTimer), so a busy server rank gets its samples once and
// few copies, and every goodbye is acknowledged.
#include "ensemble/ensemble_support.hpp"

#include <fulgur/ensemble/resend_timer.hpp>

#include <doctest/doctest.h>

#include <cstdio>

namespace ensemble_load_test {

using ensemble_support::kProbe;
using ensemble_support::kServe;
using ensemble_support::start;
using fulgur::ResendTimer;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

TEST_CASE("the resend time-out follows the measured round trips (RFC 6298), doubles on silence, stays in bounds") {
  ResendTimer timer;
  CHECK(timer.timeout_s() == ResendTimer::kFirstS);  // before any measure
  timer.measured(0.010);  // fast trips: the floor
  CHECK(timer.timeout_s() == ResendTimer::kMinS);
  CHECK(timer.round_trip_s() == doctest::Approx(0.010));
  for (int i = 0; i < 50; ++i) timer.measured(1.5);  // a busy rank: the time-out follows it up
  CHECK(timer.round_trip_s() == doctest::Approx(1.5).epsilon(0.01));
  CHECK(timer.timeout_s() > 1.5);
  CHECK(timer.timeout_s() < 2.0);
  timer.timed_out();
  const double doubled = timer.timeout_s();
  CHECK(doubled > 3.0);
  for (int i = 0; i < 5; ++i) timer.timed_out();
  CHECK(timer.timeout_s() == ResendTimer::kMaxS);  // the ceiling
  timer.measured(-1.0);  // not a trip: ignored
  CHECK(timer.timeout_s() == ResendTimer::kMaxS);
  for (int i = 0; i < 50; ++i) timer.measured(0.05);  // quick again: the time-out comes back down
  CHECK(timer.timeout_s() == ResendTimer::kMinS);
}

TEST_CASE("256 clients at once into one busy rank (two CPU hogs beside it): every sample received exactly once, "
          "every close acknowledged, copies at most 5 % of the messages") {
  TempDir dir("ensemble-load");
  const auto yaml = ensemble_support::serve_config(dir.path(), 256, 0);
  auto serve = start(kServe + " --config " + yaml.string(), 240);
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  // 256 C clients, 4 messages of 4 samples each, all at once, with the machine's cores kept busy meanwhile.
  const auto clients = run_command(
      "bash -c 'hogs=\"\"; for i in 1 2; do timeout 200 sh -c \"while :; do :; done\" & hogs=\"$hogs $!\"; done; "
      "pids=\"\"; for id in $(seq 1000 1255); do " + kProbe + " " + rendezvous +
          " $id 16 4 > /dev/null 2>&1 & pids=\"$pids $!\"; done; failed=0; "
          "for pid in $pids; do wait $pid || failed=$((failed + 1)); done; kill $hogs; echo failed: $failed'",
      240);
  INFO(clients.output);
  CHECK(clients.output.find("failed: 0") != std::string::npos);  // every close returned FULGUR_CLIENT_OK
  const auto served = serve.get();
  INFO(served.output);
  REQUIRE(served.exit_code == 0);
  CHECK(served.output.find("fulgur: ensemble: 256 clients (0 without a goodbye): 4096 samples sent, 4096 received, "
                           "0 refused, 0 lost") != std::string::npos);
  long long duplicates = 0;
  const size_t at = served.output.find("duplicate: ");
  if (at != std::string::npos) REQUIRE(std::sscanf(served.output.c_str() + at, "duplicate: %lld", &duplicates) == 1);
  MESSAGE("copies dropped as duplicates: " << duplicates << " of 1024 messages");
  CHECK(duplicates <= 1024 / 20);
}

}  // namespace ensemble_load_test
