// process_group_backend 'mpi' under load: ranks oversubscribed beside a busy
// loop on every core run every size class of all-reduce and reduce-scatter
// around the rings' threshold, all in flight at once, round after round, and
// check every element (mpi_probe stress). Rings that meet each other's
// messages, or a slot reused while a transfer into it is in flight, show
// here as a wrong value. bench/RESULTS.md has longer runs (50 rounds).
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <string>
#include <thread>

namespace mpi_stress_test {

using fulgur::testing::run_command;

namespace {

/// Runs `launch` (an mpirun command line) beside a busy loop on every core.
fulgur::testing::CommandResult beside_cpu_hogs(const std::string& launch) {
  const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
  // The hogs end with the shell that runs mpirun, and on their own after the test's bound whatever happens.
  return run_command("hogs=''; for i in $(seq " + std::to_string(cores) + "); do timeout 300 sh -c 'while :; do :; "
                     "done' >/dev/null 2>&1 & hogs=\"$hogs $!\"; done; trap 'kill $hogs 2>/dev/null' EXIT INT TERM; "
                     "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root --oversubscribe " +
                         launch,
                     300);
}

}  // namespace

// The program's own communicator (ranks 0 and 1 of 3; the third ends MPI
// meanwhile): a communicator split off MPI_COMM_WORLD carries no MPI_TAG_UB,
// and every ring once got the same tags there, so two in flight exchanged
// segments whenever the ranks posted them in different orders (wrong sums of
// the right size, then a crash). Red before the fix in 3 of 3 runs.
TEST_CASE("mpi backend under load: rings on a program's split communicator keep every value, beside a CPU hog") {
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/mpi_probe";
  const auto result = beside_cpu_hogs("-np 3 " + probe + " stress 8 subset");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  for (const std::string rank : {"0", "1", "2"}) {
    CHECK(result.output.find("rank " + rank + ": ok after 8 rounds\n") != std::string::npos);
  }
}

TEST_CASE("mpi backend under load: 4 ranks on 2 cores beside a CPU hog keep every value") {
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/mpi_probe";
  const auto result = beside_cpu_hogs("-np 4 " + probe + " stress 4");
  INFO(result.output);
  CHECK(result.exit_code == 0);
  for (const std::string rank : {"0", "1", "2", "3"}) {
    CHECK(result.output.find("rank " + rank + ": ok after 4 rounds\n") != std::string::npos);
  }
}

}  // namespace mpi_stress_test
