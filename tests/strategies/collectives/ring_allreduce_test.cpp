// RingAllreduce in real processes: equal to Gloo's allreduce for 1-5 ranks
// and awkward lengths, and a rank killed mid-ring does not hang the others.
#include "support/test_support.hpp"

#include <fulgur/strategies/collectives/ring_allreduce.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <string>

namespace ring_allreduce_test {

using fulgur::testing::run_command;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ring_probe";

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("ring allreduce: equals Gloo (sum, mean) for 1 to 5 ranks and sizes 0, 1, 7, 1000003; ProcessGroup::ring_all_reduce") {
  for (int world = 1; world <= 5; ++world) {
    CAPTURE(world);
    const auto result = run_command(kProbe + " check " + std::to_string(world), 300);
    INFO(result.output);
    CHECK(result.exit_code == 0);
    // 4 sizes x 2 ops x 2 kinds of data on every rank.
    CHECK(count(result.output, ": ok, 16 checks, ring_all_reduce ok") == world);
  }
}

TEST_CASE("ring allreduce: a rank killed mid-ring makes the others fail, not hang") {
  // Ranks started by hand (no supervisor to stop the survivors): each must
  // notice the dead peer itself.
  const int port = fulgur::testing::free_port();  // a free port, not a fixed one other tests may hold
  std::string command = "cd /tmp; ";
  for (int rank = 0; rank < 3; ++rank) {
    command += fmt::format(
        "(FULGUR_RING_TIMEOUT_S=30 RANK={0} WORLD_SIZE=3 LOCAL_RANK={0} LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 "
        "MASTER_PORT={1} {2} loop 3 1; echo \"rank {0} exit $?\") & ",
        rank, port, kProbe);
  }
  command += "wait";
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_command(command, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(result.output);
  CHECK(result.exit_code == 0);  // the shell's own; each rank's code is echoed
  CHECK(result.output.find("rank 1 exit 137") != std::string::npos);
  CHECK(result.output.find("rank 0 exit 1") != std::string::npos);
  CHECK(result.output.find("rank 2 exit 1") != std::string::npos);
  CHECK(result.output.find("[ProcessGroup::ring_allreduce]") != std::string::npos);
  CHECK(seconds < 60);
}

TEST_CASE("ring allreduce: segments grow until every (step, segment) pair has its own int tag") {
  using fulgur::RingAllreduce;
  CHECK(RingAllreduce::segment_elements(1 << 20, 4, 1000, 2) == (1 << 18));
  CHECK(RingAllreduce::segment_elements(1, 8, 1000, 2) == 1);
  // 1-byte segments of a 12 GB float buffer over 64 ranks: 126 steps of
  // 47 M segments would need tags past 2^31.
  const int64_t longest = int64_t{3} << 30;
  const int64_t steps = 126;
  const int64_t segment = RingAllreduce::segment_elements(1, 4, longest, steps);
  CHECK(segment > 1);
  CHECK(steps * ((longest + segment - 1) / segment) <= std::numeric_limits<int>::max());
  CHECK(steps * ((longest + segment - 2) / (segment - 1)) > std::numeric_limits<int>::max() / 2);
}

}  // namespace ring_allreduce_test
