// A client gone without a goodbye (killed, or its host vanished): the server
// learns it from the transport (its connection closed, or silent past the
// heartbeat's time-out) and ends without waiting for a goodbye that cannot
// come, counting that client as gone.
#include "ensemble/ensemble_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

namespace ensemble_gone_test {

using ensemble_support::kProbe;
using ensemble_support::kServe;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

using Clock = std::chrono::steady_clock;

// Waits (60 s at most) until the file `log` holds `line`.
bool logged(const std::filesystem::path& log, const std::string& line) {
  for (int i = 0; i < 1200; ++i) {
    if (std::filesystem::exists(log) && read_file(log).find(line) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

struct Outcome {
  int exit_code = -1;
  std::string log;
  /// From the signal to the server's exit.
  double after_signal_s = 0.0;
};

// fulgur_serve expecting clients 7, 8 and 9 (with a 90 s time limit, else it would wait for 7's goodbye that
// long): client 7 sends 5 messages of 10 samples and waits, and gets `signal` once the server logged its samples;
// then clients 8 and 9 stream 100 samples each and close.
Outcome run_with(const TempDir& dir, const std::string& signal, const std::string& ensemble_keys) {
  const auto yaml = ensemble_support::serve_config(dir.path(), 3, 0, "", ", time_limit_s: 90" + ensemble_keys);
  const auto log = dir / "serve.log";
  auto serve = ensemble_support::start(kServe + " --config " + yaml.string() + " 2> " + log.string(), 150);
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  const std::string pid = (dir / "client7.pid").string();
  auto held = ensemble_support::start(
      "sh -c 'echo $$ > " + pid + "; exec " + kProbe + " " + rendezvous + " 7 500 10 held_after 5'", 150);
  Outcome outcome;
  REQUIRE(logged(log, "client 7 joined"));
  REQUIRE(run_command("kill -" + signal + " $(cat " + pid + ")").exit_code == 0);
  const auto signalled = Clock::now();
  const auto others = run_command("bash -c 'failed=0; for id in 8 9; do " + kProbe + " " + rendezvous +
                                      " $id 100 10 > /dev/null & done; for pid in $(jobs -p); do wait $pid || "
                                      "failed=$((failed + 1)); done; echo failed: $failed'",
                                  120);
  INFO(others.output);
  CHECK(others.output.find("failed: 0") != std::string::npos);  // both closes acknowledged
  const auto served = serve.get();
  outcome.after_signal_s = std::chrono::duration<double>(Clock::now() - signalled).count();
  run_command("kill -KILL $(cat " + pid + ") 2> /dev/null");  // a stopped client: ended now
  const auto client = held.get();
  CHECK(client.exit_code != 0);  // it never closed
  CHECK(client.exit_code != 3);  // ended by the signal, not by its own 60 s wait
  outcome.exit_code = served.exit_code;
  outcome.log = served.output + read_file(log);
  return outcome;
}

}  // namespace

TEST_CASE("a client killed with SIGKILL mid-run: its connection closes, the server counts it gone and ends at "
          "once instead of waiting for its goodbye") {
  TempDir dir("ensemble-gone-kill");
  const Outcome outcome = run_with(dir, "KILL", "");
  INFO(outcome.log);
  REQUIRE(outcome.exit_code == 0);
  CHECK(outcome.log.find("rank 0: client 7 gone (its connection closed without a goodbye)") != std::string::npos);
  // Every sample of 8 and 9; 7's sent count unknown (no goodbye), what arrived of it counted.
  CHECK(outcome.log.find("fulgur: ensemble: 3 clients (1 without a goodbye): ") != std::string::npos);
  MESSAGE("server ended " << outcome.after_signal_s << " s after the SIGKILL");
  CHECK(outcome.after_signal_s < 45.0);  // the time limit is 90 s
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  INFO(csv);
  CHECK(csv.find("\n8,100,100,0,0,") != std::string::npos);
  CHECK(csv.find("\n9,100,100,0,0,") != std::string::npos);
  CHECK(csv.find("\n7,,") != std::string::npos);
}

TEST_CASE("a client whose host vanished (SIGSTOP: its socket stays open, nothing answers): the heartbeat closes "
          "its connection after client_timeout_s, and the server counts it gone and ends") {
  // 5 s: the streaming clients' own connections are never that silent, even on a loaded machine.
  TempDir dir("ensemble-gone-stop");
  const Outcome outcome = run_with(dir, "STOP", ", client_timeout_s: 5");
  INFO(outcome.log);
  REQUIRE(outcome.exit_code == 0);
  CHECK(outcome.log.find("rank 0: client 7 gone (its connection closed without a goodbye)") != std::string::npos);
  CHECK(outcome.log.find("fulgur: ensemble: 3 clients (1 without a goodbye): ") != std::string::npos);
  MESSAGE("server ended " << outcome.after_signal_s << " s after the SIGSTOP");
  // Not before the heartbeat's time-out (5 s after a ping that went at most a ping interval, 1 s, before it).
  CHECK(outcome.after_signal_s >= 3.0);
  CHECK(outcome.after_signal_s < 45.0);
}

}  // namespace ensemble_gone_test
