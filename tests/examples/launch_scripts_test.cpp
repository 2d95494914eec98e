// The torchrun and mpirun launch scripts in examples/ start a real 2-process
// DDP run of the cinic10 example (CPU, the demo digits) and it completes;
// mpirun's also with process_group_backend mpi.
#include "support/test_support.hpp"


#include <doctest/doctest.h>

#include <filesystem>

namespace launch_scripts_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

// A fixed port would meet another checkout's run of this test on the same machine.
std::string free_port() { return std::to_string(fulgur::testing::free_port()); }

void check_script(const std::string& name, const std::string& script, const std::string& variables) {
  TempDir dir("launch-script-" + name);
  const auto result = run_command(
      "cd " + std::string(FULGUR_SOURCE_DIR) + " && FULGUR_BUILD_DIR=" + FULGUR_BINARY_DIR +
          " NPROC=2 ACCELERATOR=cpu " + variables + " CONFIG=examples/cinic10/digits.yaml bash " + script +
          " --trainer.max_epochs 1 --trainer.limit_train_batches 4 --trainer.limit_val_batches 2 "
          "--trainer.enable_progress_bar false --test_after_fit false --data.num_workers 0 "
          "--trainer.default_root_dir " + (dir / "runs").string(),
      300);
  INFO(result.output);
  CHECK(result.exit_code == 0);
  CHECK(std::filesystem::exists(dir / "runs" / "fulgur_logs" / "version_0" / "metrics.csv"));
  CHECK(result.output.find("fit: ") != std::string::npos);
}

}  // namespace

TEST_CASE("launch scripts: examples/torchrun/train.sh runs 2 processes to the end") {
  check_script("torchrun", "examples/torchrun/train.sh", "MASTER_PORT=" + free_port());
}

TEST_CASE("launch scripts: examples/mpirun/train.sh runs 2 processes to the end") {
  check_script("mpirun", "examples/mpirun/train.sh", "MASTER_PORT=" + free_port());
}

TEST_CASE("launch scripts: examples/mpirun/train.sh with BACKEND=mpi trains over MPI, no rendezvous variable") {
  check_script("mpirun-mpi", "examples/mpirun/train.sh", "BACKEND=mpi MPIRUN_ARGS=--oversubscribe");
}

}  // namespace launch_scripts_test
