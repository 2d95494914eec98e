// cli::run's first step: a program started without OMP_WAIT_POLICY restarts
// itself (same pid, same arguments) with PASSIVE; a value the user set stays.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <string>

using fulgur::testing::run_command;

namespace {
const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/openmp_probe";
}

TEST_CASE("openmp wait policy: unset, the program restarts itself with PASSIVE and the same pid and arguments") {
  // The shell prints its pid, then becomes env, which becomes the probe.
  const auto ran = run_command("sh -c 'echo shell=$$; exec env -u OMP_WAIT_POLICY " + kProbe + " fit \"two words\" --x 1'", 60);
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  std::smatch match;
  REQUIRE(std::regex_search(ran.output, match,
                            std::regex("shell=([0-9]+)\nOMP_WAIT_POLICY=PASSIVE pid=([0-9]+) args: \\[fit\\] \\[two words\\] \\[--x\\] \\[1\\]\n")));
  CHECK(match[1] == match[2]);
}

TEST_CASE("openmp wait policy: a value the user set is kept") {
  const auto ran = run_command("OMP_WAIT_POLICY=ACTIVE " + kProbe + " fit", 60);
  INFO(ran.output);
  CHECK(ran.exit_code == 0);
  CHECK(ran.output.find("OMP_WAIT_POLICY=ACTIVE pid=") != std::string::npos);
}
