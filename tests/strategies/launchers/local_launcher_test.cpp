#include "support/test_support.hpp"

#include <fulgur/strategies/launchers/local_launcher.hpp>
#include <fulgur/strategies/launchers/network.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace local_launcher_test {

using namespace fulgur;
using fulgur::testing::can_bind;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

using Clock = std::chrono::steady_clock;

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/launcher_probe";

// A word no other process on the machine has in its command line, passed to
// the probes so leftovers can be found afterwards.
std::string unique_token() {
  static std::atomic<int> counter{0};
  return "lltok" + std::to_string(::getpid()) + "x" + std::to_string(counter++);
}

// Processes whose command line contains `token`, read from /proc (pgrep -f
// through a shell would find the shell's own command line).
int processes_with(const std::string& token) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(token) != std::string::npos) ++count;
  }
  return count;
}

// Waits (bounded) until no process carries `token`; returns how many remain.
int remaining_after(const std::string& token, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  int n = processes_with(token);
  while (n > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    n = processes_with(token);
  }
  return n;
}

struct ProbeLine {
  std::map<std::string, std::string> fields;
  const std::string& operator[](const std::string& key) const { return fields.at(key); }
};

std::vector<ProbeLine> probe_lines(const std::string& output) {
  std::vector<ProbeLine> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("probe ", 0) != 0) continue;
    ProbeLine parsed;
    std::istringstream words(line.substr(6));
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      if (eq != std::string::npos) parsed.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    lines.push_back(parsed);
  }
  return lines;
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Shell lines that start the launcher in the background with its output in
// `log`, wait (bounded, and only while the launcher lives) until `ranks`
// probes have printed, then run `action` with $pid the launcher's pid, and
// print the launcher's status as rc=<code> followed by the log.
std::string background_script(const std::string& launch_args, const std::string& log, int ranks,
                              const std::string& action) {
  // ${n:-0}: the background job may not have created the log yet.
  return kProbe + " " + launch_args + " > " + log + " 2>&1 & pid=$!\n" +
         "i=0; while n=$(grep -c '^probe rank' " + log + " 2>/dev/null); [ \"${n:-0}\" -lt " +
         std::to_string(ranks) + " ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do\n" +
         "  sleep 0.05; i=$((i+1))\ndone\n" + action + "\nwait $pid; echo rc=$?\ncat " + log;
}

}  // namespace

TEST_CASE("LocalLauncher: options are validated at construction with exact messages") {
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(0)), "[LocalLauncher::LocalLauncher] nprocs must be >= 1, got 0",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).num_nodes(0)),
                       "[LocalLauncher::LocalLauncher] num_nodes must be >= 1, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).num_nodes(2).node_rank(2).main_port(29500)),
                       "[LocalLauncher::LocalLauncher] node_rank must be in [0, num_nodes) = [0, 2), got 2",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).node_rank(-1)),
                       "[LocalLauncher::LocalLauncher] node_rank must be in [0, num_nodes) = [0, 1), got -1",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).main_address("")),
                       "[LocalLauncher::LocalLauncher] main_address must not be empty", std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).main_port(70000)),
                       "[LocalLauncher::LocalLauncher] main_port must be in [0, 65535], got 70000",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).num_nodes(2)),
                       "[LocalLauncher::LocalLauncher] main_port 0 (pick a free port) needs num_nodes == 1, got "
                       "num_nodes 2; set main_port to a port every node agrees on",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(LocalLauncher(LocalLauncherOptions(2).grace_period_s(-1.5)),
                       "[LocalLauncher::LocalLauncher] grace_period_s must be a finite number >= 0, got -1.5",
                       std::invalid_argument);

  LocalLauncher ok(LocalLauncherOptions(2));
  CHECK_THROWS_WITH_AS(ok.launch(0, nullptr), "[LocalLauncher::launch] argv must hold at least argv[0], got argc 0",
                       std::invalid_argument);
  CHECK(ok.options().nprocs() == 2);
  CHECK(ok.options().main_address() == "127.0.0.1");
  CHECK(ok.options().grace_period_s() == 5.0);
}

TEST_CASE("LocalLauncher: a validation error reaches the user of a binary before any process starts") {
  const std::string token = unique_token();
  const auto result = run_command(kProbe + " launch 2 --nodes 3 --node-rank 3 --port 29500 ok " + token, 60);
  CHECK(result.exit_code == 2);
  CHECK(result.output.find("[LocalLauncher::LocalLauncher] node_rank must be in [0, num_nodes) = [0, 3), got 3") !=
        std::string::npos);
  CHECK(probe_lines(result.output).empty());
}

TEST_CASE("pick_free_port returns a port that can be bound") {
  const int port = fulgur::pick_free_port("127.0.0.1");
  CHECK(port > 0);
  CHECK(port <= 65535);
  CHECK(can_bind(port));

  CHECK_THROWS_WITH_AS(fulgur::pick_free_port("no-such-host.invalid"),
                       doctest::Contains("[pick_free_port] cannot resolve address 'no-such-host.invalid'"),
                       std::runtime_error);
}

TEST_CASE("the tests' free_port: below the ephemeral range, and nothing listens on it") {
  int ephemeral_low = 0;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  // A range that leaves no room below it (under 11000) gets bind(0)'s ports instead.
  const bool below = ephemeral_low > 11000;
  for (int i = 0; i < 20; ++i) {
    const int port = fulgur::testing::free_port();
    CHECK(port > 0);
    if (below) CHECK(port >= 10000);
    if (below) CHECK(port < ephemeral_low);
    CHECK(can_bind(port));
  }
}

TEST_CASE("LocalLauncher: three ranks get distinct RANKs and the same WORLD_SIZE and MASTER_PORT") {
  const std::string token = unique_token();
  const auto start = Clock::now();
  // Stale launcher variables in the launcher's environment must not leak.
  const auto result = run_command("LOCAL_RANK=9 GROUP_RANK=5 MASTER_PORT=1 " + kProbe + " launch 3 ok " + token, 60);
  CHECK(seconds_since(start) < 60);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  const auto lines = probe_lines(result.output);
  REQUIRE(lines.size() == 3);
  std::set<std::string> ranks;
  std::set<std::string> local_ranks;
  for (const auto& line : lines) {
    ranks.insert(line["rank"]);
    local_ranks.insert(line["local_rank"]);
    CHECK(line["world_size"] == "3");
    CHECK(line["local_world_size"] == "3");
    CHECK(line["group_rank"] == "0");
    CHECK(line["master_addr"] == "127.0.0.1");
    CHECK(line["master_port"] == lines[0]["master_port"]);
  }
  CHECK(ranks == std::set<std::string>{"0", "1", "2"});
  CHECK(local_ranks == std::set<std::string>{"0", "1", "2"});
  const int port = std::stoi(lines[0]["master_port"]);
  CHECK(port > 1);
  CHECK(port <= 65535);
  CHECK(result.output.find("[LocalLauncher]") == std::string::npos);
  CHECK(remaining_after(token, 5) == 0);
}

TEST_CASE("LocalLauncher: node_rank offsets the global ranks; an explicit port is passed through") {
  const std::string token = unique_token();
  const auto result =
      run_command(kProbe + " launch 2 --nodes 2 --node-rank 1 --port 29123 --address localhost ok " + token, 60);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  const auto lines = probe_lines(result.output);
  REQUIRE(lines.size() == 2);
  std::set<std::string> ranks;
  for (const auto& line : lines) {
    ranks.insert(line["rank"]);
    CHECK(line["world_size"] == "4");
    CHECK(line["local_world_size"] == "2");
    CHECK(line["group_rank"] == "1");
    CHECK(line["master_addr"] == "localhost");
    CHECK(line["master_port"] == "29123");
  }
  CHECK(ranks == std::set<std::string>{"2", "3"});
}

TEST_CASE("LocalLauncher: a rank exiting with code 7 stops the others and the launcher returns 7") {
  const std::string token = unique_token();
  const auto start = Clock::now();
  // The grace period is long: the hanging ranks must go on SIGTERM, not SIGKILL.
  const auto result = run_command(kProbe + " launch 3 --grace 30 fail 1 7 " + token, 60);
  const double elapsed = seconds_since(start);
  INFO(result.output);
  CHECK(result.exit_code == 7);
  CHECK(elapsed < 20);
  CHECK(count_of(result.output, "[LocalLauncher] rank 1 exited with code 7\n") == 1);
  CHECK(count_of(result.output, "[LocalLauncher]") == 1);  // one line, not one per stopped rank
  CHECK(remaining_after(token, 5) == 0);
}

TEST_CASE("LocalLauncher: ranks that ignore SIGTERM are killed after the grace period") {
  const std::string token = unique_token();
  const auto start = Clock::now();
  const auto result = run_command(kProbe + " launch 3 --grace 0.5 fail 0 3 stubborn " + token, 60);
  const double elapsed = seconds_since(start);
  INFO(result.output);
  CHECK(result.exit_code == 3);
  CHECK(elapsed < 20);
  CHECK(count_of(result.output, "[LocalLauncher] rank 0 exited with code 3\n") == 1);
  CHECK(result.output.find("was never stopped") == std::string::npos);
  CHECK(remaining_after(token, 5) == 0);
}

TEST_CASE("LocalLauncher: a rank killed by SIGKILL is reported by rank and signal name") {
  const std::string token = unique_token();
  const auto start = Clock::now();
  const auto result = run_command(kProbe + " launch 3 --grace 30 kill9 2 " + token, 60);
  INFO(result.output);
  CHECK(seconds_since(start) < 20);
  CHECK(result.exit_code == 128 + 9);
  CHECK(count_of(result.output, "[LocalLauncher] rank 2 was killed by signal 9 (SIGKILL)\n") == 1);
  CHECK(count_of(result.output, "[LocalLauncher]") == 1);
  CHECK(remaining_after(token, 5) == 0);
}

TEST_CASE("LocalLauncher: SIGINT / SIGTERM to the launcher are forwarded and give 130 / 143") {
  struct Case {
    const char* signal;
    int expected;
  };
  for (const Case c : {Case{"INT", 130}, Case{"TERM", 143}}) {
    CAPTURE(c.signal);
    TempDir dir("local-launcher-signal");
    const std::string token = unique_token();
    const auto start = Clock::now();
    // Grace 30 s: finishing well before it shows the children stopped on the
    // forwarded signal rather than on the SIGKILL fallback.
    const auto result = run_command(
        background_script("launch 2 --grace 30 hang " + token, (dir / "log").string(), 2,
                          std::string("kill -") + c.signal + " $pid"),
        60);
    INFO(result.output);
    CHECK(seconds_since(start) < 20);
    CHECK(result.output.find("rc=" + std::to_string(c.expected) + "\n") != std::string::npos);
    CHECK(result.output.find(std::string("[LocalLauncher] received SIG") + c.signal) != std::string::npos);
    CHECK(probe_lines(result.output).size() == 2);
    CHECK(remaining_after(token, 5) == 0);
  }
}

TEST_CASE("LocalLauncher: a second SIGINT kills ranks that ignore the first at once") {
  TempDir dir("local-launcher-second-sigint");
  const std::string token = unique_token();
  const auto start = Clock::now();
  const auto result = run_command(background_script("launch 2 --grace 30 hang stubborn " + token,
                                                    (dir / "log").string(), 2,
                                                    "kill -INT $pid; sleep 0.3; kill -INT $pid"),
                                  60);
  INFO(result.output);
  CHECK(seconds_since(start) < 20);
  CHECK(result.output.find("rc=130\n") != std::string::npos);
  CHECK(remaining_after(token, 5) == 0);
}

TEST_CASE("LocalLauncher: ranks die with a launcher that is killed by SIGKILL") {
  TempDir dir("local-launcher-sigkill");
  const std::string token = unique_token();
  const auto result = run_command(
      background_script("launch 3 hang " + token, (dir / "log").string(), 3, "kill -KILL $pid"), 60);
  INFO(result.output);
  CHECK(result.output.find("rc=137\n") != std::string::npos);
  CHECK(probe_lines(result.output).size() == 3);
  CHECK(remaining_after(token, 10) == 0);
}

}  // namespace local_launcher_test
