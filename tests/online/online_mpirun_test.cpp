// The online layer over a program's own ranks: real mpirun (Open MPI), the
// rendezvous on a FileStore in the test's folder (no port to share).
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <filesystem>

#include <doctest/doctest.h>

namespace online_mpirun_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = fulgur::testing::probe_program("online_probe");

/// Runs `online_probe mode` on `ranks` processes (1: without mpirun) and
/// returns rank 0's final parameters.
torch::Tensor run_probe(const TempDir& dir, const std::string& mode, int ranks) {
  const std::string name = mode + "-" + std::to_string(ranks);
  const std::string output = (dir / (name + ".pt")).string();
  const std::string command =
      ranks == 1 ? kProbe + " " + mode + " " + output
                 : "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) +
                       " -x FULGUR_FILE_STORE=" + (dir / ("store-" + name)).string() + " " + kProbe + " " + mode +
                       " " + output;
  const auto result = run_command(command, 300);
  INFO(command);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  return load_pickled_tensor(output);
}

}  // namespace

TEST_CASE("inline mode: 2 ranks under mpirun equal 1 rank on the same global stream") {
  TempDir dir("online-mpirun-inline");
  const torch::Tensor one = run_probe(dir, "inline", 1);
  const torch::Tensor two = run_probe(dir, "inline", 2);
  CHECK(one.numel() == 4 * 16 + 16 + 16 * 2 + 2);
  CHECK(torch::allclose(two, one, 1e-6, 1e-6));
  CHECK_FALSE(torch::allclose(one, torch::zeros_like(one)));
}

TEST_CASE("inline mode under horovod (ring allreduce): 2 ranks under mpirun equal 1 rank") {
  TempDir dir("online-mpirun-horovod");
  CHECK(torch::allclose(run_probe(dir, "horovod", 2), run_probe(dir, "inline", 1), 1e-6, 1e-6));
}

TEST_CASE("Fabric with ddp on 2 ranks ends at fit's weights (fit over a stream, same ranks, same batches)") {
  TempDir dir("online-mpirun-fabric");
  const torch::Tensor fabric = run_probe(dir, "fabric", 2);
  const torch::Tensor fit = run_probe(dir, "fit", 2);
  CHECK(torch::equal(fabric, fit));
  // and the 2-rank run equals one process on the whole batches
  CHECK(torch::allclose(fabric, run_probe(dir, "fabric", 1), 1e-6, 1e-6));
}

TEST_CASE("SIGTERM mid-run saves a checkpoint at a step boundary; the restarted program resumes and ends as an unstopped run") {
  TempDir dir("online-resume");
  const torch::Tensor straight = run_probe(dir, "inline", 1);
  const std::string output = (dir / "resumed.pt").string();
  const std::string checkpoints = (dir / "checkpoints").string();
  const std::string command = kProbe + " resume " + output + " " + checkpoints;
  const auto stopped = run_command(command + " 5", 300);
  INFO(stopped.output);
  CHECK(stopped.exit_code == 143);  // 128 + SIGTERM: the scheduler sees an unfinished run
  CHECK(std::filesystem::exists(dir / "checkpoints" / "online_last.ckpt"));
  CHECK_FALSE(std::filesystem::exists(output));
  const auto resumed = run_command(command + " -1", 300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resumed online training at step 6") != std::string::npos);
  CHECK(torch::equal(load_pickled_tensor(output), straight));
}

}  // namespace online_mpirun_test
