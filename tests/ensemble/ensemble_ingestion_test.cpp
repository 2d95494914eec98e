// What a server rank takes from a client: a NaN or an infinity in a sample
// is refused at ingestion (reason `nonfinite`), the message's other samples
// taken, and training (on_nonfinite: stop, the default) goes on; clients of
// any window are acknowledged (the rank answers every few messages, or soon).
#include "ensemble/ensemble_support.hpp"

#include <doctest/doctest.h>

#include <future>
#include <vector>

namespace ensemble_ingestion_test {

using ensemble_support::kProbe;
using ensemble_support::kServe;
using ensemble_support::start;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

TEST_CASE("one client's NaN and Inf samples are refused at ingestion and counted; its other samples and the other "
          "client's train, and training goes on") {
  TempDir dir("ensemble-nonfinite");
  // on_nonfinite: stop (the default): a NaN that reached a step would end the run with an error.
  const auto yaml = ensemble_support::serve_config(dir.path(), 2, 100);
  auto serve = start(kServe + " --config " + yaml.string());
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  // Client 7's 4th send (samples 30 to 39) holds a NaN in sample 30's inputs and an Inf in sample 39's targets.
  auto bad = start(kProbe + " " + rendezvous + " 7 300 10 nan_at 3");
  auto good = start(kProbe + " " + rendezvous + " 8 300 10");
  for (auto* c : {&bad, &good}) {
    const auto result = c->get();
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  const auto served = serve.get();
  INFO(served.output);
  REQUIRE(served.exit_code == 0);
  CHECK(served.output.find("fulgur: ensemble: rank 0 refused a message (nonfinite): client 7: 2 of the 10 samples "
                           "numbered from 30 hold NaN or Inf (the first: number 30)") != std::string::npos);
  CHECK(served.output.find("fulgur: ensemble: 2 clients (0 without a goodbye): 600 samples sent, 598 received, 2 "
                           "refused, 0 lost") != std::string::npos);
  CHECK(served.output.find("message(s) refused (nonfinite: 1)") != std::string::npos);
  CHECK(served.output.find("skipped") == std::string::npos);
  int steps = 0;
  REQUIRE(std::sscanf(served.output.substr(served.output.find("fulgur_serve: ")).c_str(), "fulgur_serve: %d steps",
                      &steps) == 1);
  CHECK(steps >= 100);
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  INFO(csv);
  CHECK(csv.find("\n7,300,298,2,0,") != std::string::npos);
  CHECK(csv.find("\n8,300,300,0,0,") != std::string::npos);
}

TEST_CASE("clients whose windows hold 1, 3 and 64 messages into one rank: every sample received once and every "
          "close acknowledged (a message that fills its window asks for an answer at once, so a window smaller than "
          "the rank's batch of 16 is not left waiting)") {
  TempDir dir("ensemble-windows");
  const auto yaml = ensemble_support::serve_config(dir.path(), 3, 10);
  auto serve = start(kServe + " --config " + yaml.string());
  const std::string rendezvous = (dir / "run" / "ensemble.rendezvous").string();
  // 400 messages of one sample each; a close that gives up (30 s) exits 5, unacknowledged.
  std::vector<std::future<fulgur::testing::CommandResult>> clients;
  for (const int window : {1, 3, 64}) {
    clients.push_back(start(kProbe + " " + rendezvous + " " + std::to_string(window) + " 400 1 window " +
                            std::to_string(window)));
  }
  for (auto& c : clients) {
    const auto result = c.get();
    INFO(result.output);
    CHECK(result.exit_code == 0);
    CHECK(result.output.find(": sent 400 dropped 0 queued 0") != std::string::npos);
  }
  const auto served = serve.get();
  INFO(served.output);
  REQUIRE(served.exit_code == 0);
  CHECK(served.output.find("fulgur: ensemble: 3 clients (0 without a goodbye): 1200 samples sent, 1200 received, 0 "
                           "refused, 0 lost") != std::string::npos);
  const std::string csv = read_file(dir / "run" / "ensemble_accounting.csv");
  INFO(csv);
  for (const int window : {1, 3, 64}) CHECK(csv.find(fmt::format("\n{},400,400,0,0,", window)) != std::string::npos);
}

}  // namespace ensemble_ingestion_test
