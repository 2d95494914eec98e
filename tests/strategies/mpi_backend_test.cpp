// process_group_backend 'mpi': ranks started by a real mpirun (Open MPI)
// carry ddp's, horovod's and fsdp's collectives over MPI, with no
// rendezvous variable, and end where the same ranks end over Gloo.
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

namespace mpi_backend_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const auto& fit_command = fulgur::testing::ddp_probe_fit_named;
// No MASTER_ADDR, MASTER_PORT or FULGUR_FILE_STORE reaches the ranks.
const std::string kMpirun = "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                            "--oversubscribe -np 2 ";
const std::string kMpirun3 = "env -u MASTER_ADDR -u MASTER_PORT -u FULGUR_FILE_STORE mpirun --allow-run-as-root "
                             "--oversubscribe -np 3 ";

}  // namespace

TEST_CASE("mpi backend: ddp, horovod and fsdp over MPI under mpirun end where the same ranks end over Gloo") {
  TempDir dir("mpi-backend");
  for (const std::string strategy : {"ddp", "horovod", "fsdp"}) {
    CAPTURE(strategy);
    const std::string extra = "--trainer.devices 2 --data.batch_size 8 --model.depth 1 --trainer.strategy " + strategy;
    const auto gloo = run_command(fit_command(dir, strategy + "-gloo", extra), 300);
    INFO(gloo.output);
    REQUIRE(gloo.exit_code == 0);
    const auto mpi = run_command(
        kMpirun + fit_command(dir, strategy + "-mpi", extra + " --trainer.process_group_backend mpi"), 300);
    INFO(mpi.output);
    REQUIRE(mpi.exit_code == 0);
    const torch::Tensor reference = load_pickled_tensor(dir / (strategy + "-gloo.pt"));
    CHECK_FALSE(torch::allclose(reference, torch::zeros_like(reference)));
    CHECK(torch::allclose(load_pickled_tensor(dir / (strategy + "-mpi.pt")), reference, 1e-6, 1e-6));
  }
}

TEST_CASE("mpi backend: a rank that dies mid-run ends the whole mpirun job") {
  TempDir dir("mpi-backend-kill");
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_command(
      kMpirun + fit_command(dir, "kill",
                            "--trainer.devices 2 --data.batch_size 8 --trainer.process_group_backend mpi "
                            "--model.kill_rank 1 --model.kill_step 3"),
      120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(result.output);
  CHECK(result.exit_code != 0);
  CHECK(result.exit_code != 124);  // not the test's own timeout
  CHECK(seconds < 60);
}

TEST_CASE("mpi backend: SIGTERM while a rank is held in an MPI collective ends the job, not a wait forever") {
  // Rank 1 sleeps in its third step, so rank 0 waits for it in the gradient
  // all-reduce. Both get SIGTERM; after the grace period rank 0, held in the
  // collective, aborts the group: its wait returns, it ends, and mpirun ends
  // rank 1 (asleep for 600 s in its own code).
  TempDir dir("mpi-backend-held");
  const std::string pid_file = (dir / "pid").string();
  const std::string command =
      "( FULGUR_SIGNAL_GRACE_S=2 " + kMpirun + "-x FULGUR_SIGNAL_GRACE_S " +
      fulgur::testing::ddp_probe_fit(dir.path() / "runs",
                                     "--trainer.devices 2 --data.batch_size 8 --trainer.max_epochs 2 "
                                     "--trainer.process_group_backend mpi --model.sleep_rank 1 --model.sleep_step 2 "
                                     "--model.sleep_s 600 --model.pid_file " + pid_file) +
      " > " + (dir / "log").string() + " 2>&1; echo $? > " + (dir / "rc").string() + " ) & " +
      "for i in $(seq 300); do [ -f " + pid_file + ".0 ] && [ -f " + pid_file + ".1 ] && break; sleep 0.1; done; " +
      "sleep 1; kill -TERM $(cat " + pid_file + ".0) $(cat " + pid_file + ".1); wait";
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_command(command, 120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const std::string log = std::filesystem::exists(dir / "log") ? fulgur::testing::read_file(dir / "log") : "";
  INFO(result.output);
  INFO(log);
  REQUIRE(std::filesystem::exists(dir / "rc"));
  CHECK(fulgur::testing::read_file(dir / "rc") != "0\n");
  CHECK(log.find("rank 0: SIGTERM not acted on at a step boundary within 2 s; waiting in ") != std::string::npos);
  CHECK(seconds < 60);
}

TEST_CASE("mpi backend: ranks the program would start itself are refused with one line") {
  TempDir dir("mpi-backend-alone");
  const auto alone = run_command(
      fit_command(dir, "alone", "--trainer.devices 2 --data.batch_size 8 --trainer.process_group_backend mpi"), 120);
  INFO(alone.output);
  CHECK(alone.exit_code == 2);
  CHECK(alone.output.find("process_group_backend 'mpi' needs ranks started by an MPI launcher (mpirun -np 2, "
                          "mpiexec, srun --mpi=pmix), but this program was started alone and would start its 2 "
                          "ranks itself") != std::string::npos);
  // One rank under mpirun but a run of two: MPI's numbering is named.
  const auto short_job = run_command("env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root -np 1 " +
                                         fit_command(dir, "short", "--trainer.devices 2 --data.batch_size 8 "
                                                                   "--trainer.process_group_backend mpi"),
                                     120);
  INFO(short_job.output);
  CHECK(short_job.exit_code != 0);
  CHECK(short_job.output.find("does not match the world size 1 reported by OMPI_COMM_WORLD_SIZE") !=
        std::string::npos);
}

TEST_CASE("mpi backend: every operation gives its value on 3 ranks (and 2), whether fulgur or the program began MPI") {
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/mpi_probe";
  for (const std::string mode : {"world", "program"}) {
    CAPTURE(mode);
    const auto result = run_command(kMpirun3 + probe + " " + mode, 180);
    INFO(result.output);
    CHECK(result.exit_code == 0);
    for (const std::string rank : {"0", "1", "2"}) CHECK(result.output.find("rank " + rank + ": ok\n") != std::string::npos);
  }
  // Two ranks: the rings' other shape (a reduce-scatter's one step needs no scratch).
  const auto two = run_command(kMpirun + probe + " world", 180);
  INFO(two.output);
  CHECK(two.exit_code == 0);
  for (const std::string rank : {"0", "1"}) CHECK(two.output.find("rank " + rank + ": ok\n") != std::string::npos);
}

TEST_CASE("mpi backend: a program's MPI below MPI_THREAD_SERIALIZED, and a rank outside the communicator, each get one line") {
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/mpi_probe";
  const auto funneled = run_command(kMpirun3 + probe + " funneled", 120);
  INFO(funneled.output);
  CHECK(funneled.exit_code != 0);
  CHECK(funneled.output.find("rank 0: [MpiProcessGroup] the program initialised MPI with MPI_THREAD_FUNNELED; fulgur "
                             "calls MPI from threads of its own and needs MPI_THREAD_SERIALIZED, or "
                             "MPI_THREAD_MULTIPLE where") != std::string::npos);
  // Ranks 0 and 1 form the program's communicator; rank 2 gets MPI_COMM_NULL.
  const auto subset = run_command(kMpirun3 + probe + " subset", 120);
  INFO(subset.output);
  CHECK(subset.exit_code == 0);
  CHECK(subset.output.find("rank 0: ok\n") != std::string::npos);
  CHECK(subset.output.find("rank 1: ok\n") != std::string::npos);
  CHECK(subset.output.find("rank 2: refused: [MpiProcessGroup] the communicator is MPI_COMM_NULL: only the ranks of "
                           "a communicator train (a rank outside it trains nothing)\n") != std::string::npos);
  CHECK(subset.output.find("rank 2: ok\n") != std::string::npos);
}

TEST_CASE("mpi backend: the program's communicator of 2 of 3 ranks trains one model online; the third keeps its own loop") {
  TempDir dir("mpi-online-subset");
  const std::string probe = std::string(FULGUR_BINARY_DIR) + "/bin/mpi_probe";
  // Rank 0 alone (a communicator of one) on the whole stream, then ranks 0 and 1 of 3 on halves of it.
  const auto alone = run_command("env -u MASTER_ADDR -u MASTER_PORT mpirun --allow-run-as-root -np 1 " + probe +
                                     " online " + (dir / "one.pt").string(),
                                 180);
  INFO(alone.output);
  REQUIRE(alone.exit_code == 0);
  const auto three = run_command(kMpirun3 + probe + " online " + (dir / "two.pt").string(), 180);
  INFO(three.output);
  REQUIRE(three.exit_code == 0);
  CHECK(three.output.find("rank 0: trained 8 steps on the communicator") != std::string::npos);
  CHECK(three.output.find("rank 1: trained 8 steps on the communicator") != std::string::npos);
  CHECK(three.output.find("rank 2: own loop stepped 8 times") != std::string::npos);
  const torch::Tensor one = load_pickled_tensor(dir / "one.pt");
  CHECK(one.numel() == 4 * 16 + 16 + 16 * 2 + 2);
  CHECK_FALSE(torch::allclose(one, torch::zeros_like(one)));
  CHECK(torch::allclose(load_pickled_tensor(dir / "two.pt"), one, 1e-6, 1e-6));
}

}  // namespace mpi_backend_test
