// The Trainer's first step (option openmp_wait_policy, default passive): a
// program started without OMP_WAIT_POLICY restarts itself (same pid, same
// arguments) with PASSIVE, and its OpenMP threads then sleep instead of
// spinning; a value the user set stays and is followed; "environment"
// leaves the variable alone.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <string>

using fulgur::testing::run_command;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/openmp_probe";

struct ProbeReport {
  bool restarted = false;
  double idle_cpu_ms = 0;
};

/// The probe's second line: whether it restarted, and the CPU time it used
/// during 20 sleeps of 20 ms after parallel regions of two threads.
ProbeReport parse(const std::string& output) {
  std::smatch match;
  REQUIRE(std::regex_search(output, match, std::regex("\nrestarted=([01]) idle_cpu_ms=([0-9.e+-]+)\n")));
  return {match[1] == "1", std::stod(match[2])};
}

}  // namespace

TEST_CASE("openmp wait policy: unset, the program restarts itself with PASSIVE and the same pid and arguments") {
  // The shell prints its pid, then becomes env, which becomes the probe.
  const auto ran = run_command("sh -c 'echo shell=$$; exec env -u OMP_WAIT_POLICY " + kProbe + " fit \"two words\" --x 1'", 60);
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  std::smatch match;
  REQUIRE(std::regex_search(ran.output, match,
                            std::regex("shell=([0-9]+)\nOMP_WAIT_POLICY=PASSIVE pid=([0-9]+) args: \\[fit\\] \\[two words\\] \\[--x\\] \\[1\\]\n")));
  CHECK(match[1] == match[2]);
  const ProbeReport report = parse(ran.output);
  CHECK(report.restarted);
  // The runtime read PASSIVE: its idle thread sleeps. Spinning, it would use
  // up to the 400 ms slept (ACTIVE below; libgomp's default spins ~6 ms per
  // region here, ~120 ms in all).
  CHECK(report.idle_cpu_ms < 40);
}

TEST_CASE("openmp wait policy: a value the user set is kept, and the runtime follows it") {
  const auto ran = run_command("OMP_WAIT_POLICY=ACTIVE " + kProbe + " fit", 60);
  INFO(ran.output);
  CHECK(ran.exit_code == 0);
  CHECK(ran.output.find("OMP_WAIT_POLICY=ACTIVE pid=") != std::string::npos);
  const ProbeReport report = parse(ran.output);
  CHECK_FALSE(report.restarted);
  CHECK(report.idle_cpu_ms > 40);  // its OpenMP thread spun through the sleeps (~400 ms on an idle machine)
}

TEST_CASE("openmp wait policy: the option environment leaves the variable unset and the program as started") {
  const auto ran = run_command("env -u OMP_WAIT_POLICY " + kProbe + " environment", 60);
  INFO(ran.output);
  CHECK(ran.exit_code == 0);
  CHECK(ran.output.find("OMP_WAIT_POLICY=(unset) pid=") != std::string::npos);
  CHECK_FALSE(parse(ran.output).restarted);
}
