// The option openmp_wait_policy in a user's own main() (tests/probes/
// openmp_probe.cpp). By default (launched) the program is never restarted
// and what main() does before the Trainer happens once per process; the
// ranks the Trainer starts get OMP_WAIT_POLICY=PASSIVE in their
// environment. fulgur never restarts a program: passive only warns when the
// program itself started without the variable. A value the user set is
// kept; environment leaves the variable alone everywhere.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

namespace openmp_wait_policy_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

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

/// The probe started without OMP_WAIT_POLICY.
fulgur::testing::CommandResult run_unset(const std::string& args) {
  return run_command("env -u OMP_WAIT_POLICY " + kProbe + " " + args, 120);
}

/// The pids main() wrote before it built its Trainer, one line each.
std::multiset<std::string> appended(const std::filesystem::path& file) {
  std::multiset<std::string> lines;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) lines.insert(line);
  return lines;
}

}  // namespace

TEST_CASE("openmp wait policy: by default a user's main() is not restarted and the variable stays unset") {
  const auto ran = run_command("sh -c 'echo shell=$$; exec env -u OMP_WAIT_POLICY " + kProbe + " default fit \"two words\"'", 60);
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  std::smatch match;
  REQUIRE(std::regex_search(ran.output, match,
                            std::regex("shell=([0-9]+)\nOMP_WAIT_POLICY=\\(unset\\) pid=([0-9]+) args: \\[fit\\] \\[two words\\]\n")));
  CHECK(match[1] == match[2]);
  CHECK_FALSE(parse(ran.output).restarted);
}

TEST_CASE("openmp wait policy: passive never restarts the program; it says how to start it instead") {
  // The shell prints its pid, then becomes env, which becomes the probe.
  const auto ran = run_command("sh -c 'echo shell=$$; exec env -u OMP_WAIT_POLICY " + kProbe + " passive fit \"two words\" --x 1'", 60);
  INFO(ran.output);
  REQUIRE(ran.exit_code == 0);
  std::smatch match;
  CHECK(ran.output.find("fulgur: warning: openmp_wait_policy passive: this program started without OMP_WAIT_POLICY") !=
        std::string::npos);
  REQUIRE(std::regex_search(ran.output, match, std::regex("shell=([0-9]+)\n")));
  const std::string shell = match[1];
  REQUIRE(std::regex_search(ran.output, match,
                            std::regex("OMP_WAIT_POLICY=\\(unset\\) pid=([0-9]+) args: \\[fit\\] \\[two words\\] \\[--x\\] \\[1\\]\n")));
  CHECK(match[1] == shell);
  CHECK_FALSE(parse(ran.output).restarted);
}

TEST_CASE("openmp wait policy: a program started with PASSIVE is not restarted and its idle threads sleep") {
  // What the launched ranks get through their environment.
  const auto ran = run_command("OMP_WAIT_POLICY=PASSIVE " + kProbe + " launched fit", 60);
  INFO(ran.output);
  CHECK(ran.exit_code == 0);
  CHECK_FALSE(parse(ran.output).restarted);
  // Spinning, it would use up to the 400 ms slept (ACTIVE below).
  CHECK(parse(ran.output).idle_cpu_ms < 40);
}

TEST_CASE("openmp wait policy: a value the user set is kept, and the runtime follows it") {
  const auto ran = run_command("OMP_WAIT_POLICY=ACTIVE " + kProbe + " passive fit", 60);
  INFO(ran.output);
  CHECK(ran.exit_code == 0);
  CHECK(ran.output.find("OMP_WAIT_POLICY=ACTIVE pid=") != std::string::npos);
  const ProbeReport report = parse(ran.output);
  CHECK_FALSE(report.restarted);
  CHECK(report.idle_cpu_ms > 40);  // its OpenMP thread spun through the sleeps (~400 ms on an idle machine)
}

TEST_CASE("openmp wait policy: main()'s side effects happen once per process; launched ranks get PASSIVE") {
  TempDir dir("openmp-policy");
  SUBCASE("devices 1: one process, one line") {
    const auto ran = run_unset("default --devices 1 --append " + (dir / "lines").string());
    INFO(ran.output);
    CHECK(ran.exit_code == 0);
    CHECK(appended(dir / "lines").size() == 1);
    CHECK(ran.output.find("rank 0: OMP_WAIT_POLICY=(unset)") != std::string::npos);
  }
  SUBCASE("devices 2: rank 1 is a new process running the program: two lines, two pids") {
    const auto ran = run_unset("default --devices 2 --append " + (dir / "lines").string());
    INFO(ran.output);
    CHECK(ran.exit_code == 0);
    const auto lines = appended(dir / "lines");
    CHECK(lines.size() == 2);
    CHECK(std::set<std::string>(lines.begin(), lines.end()).size() == 2);
    CHECK(ran.output.find("rank 0: OMP_WAIT_POLICY=(unset)") != std::string::npos);
    CHECK(ran.output.find("rank 1: OMP_WAIT_POLICY=PASSIVE") != std::string::npos);
  }
  SUBCASE("passive, devices 2: main() runs once per process, and the launched rank gets PASSIVE") {
    const auto ran = run_unset("passive --devices 2 --append " + (dir / "lines").string());
    INFO(ran.output);
    CHECK(ran.exit_code == 0);
    const auto lines = appended(dir / "lines");
    CHECK(lines.size() == 2);
    CHECK(std::set<std::string>(lines.begin(), lines.end()).size() == 2);
    CHECK(ran.output.find("rank 1: OMP_WAIT_POLICY=PASSIVE") != std::string::npos);
  }
  SUBCASE("environment, devices 2: no rank gets the variable") {
    const auto ran = run_unset("environment --devices 2");
    INFO(ran.output);
    CHECK(ran.exit_code == 0);
    CHECK(ran.output.find("rank 0: OMP_WAIT_POLICY=(unset)") != std::string::npos);
    CHECK(ran.output.find("rank 1: OMP_WAIT_POLICY=(unset)") != std::string::npos);
  }
}

}  // namespace openmp_wait_policy_test
