// DDP in real processes: fulgur's launcher (and torchrun) start ranks that
// meet over a TCPStore on loopback and average gradients through Gloo.
#include "support/pickled_tensor.hpp"
#include "support/probe_commands.hpp"
#include "support/test_support.hpp"


#include <fmt/format.h>
#include <torch/torch.h>

#include <doctest/doctest.h>

#include <filesystem>

namespace ddp_test {

using fulgur::testing::load_pickled_tensor;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = fulgur::testing::probe_program("ddp_probe");
const auto& fit_command = fulgur::testing::ddp_probe_fit_named;

}  // namespace

TEST_CASE("ddp: 2 and 4 processes equal one process on the same global batch") {
  TempDir dir("ddp-equivalence");
  const auto one = run_command(fit_command(dir, "one", "--data.batch_size 16"), 300);
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto two = run_command(fit_command(dir, "two", "--trainer.devices 2 --data.batch_size 8"), 300);
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  const auto four = run_command(fit_command(dir, "four", "--trainer.devices 4 --data.batch_size 4"), 300);
  INFO(four.output);
  REQUIRE(four.exit_code == 0);

  const torch::Tensor reference = load_pickled_tensor(dir / "one.pt");
  const torch::Tensor initial_guess = torch::zeros_like(reference);
  CHECK_FALSE(torch::allclose(reference, initial_guess));
  CHECK(torch::allclose(load_pickled_tensor(dir / "two.pt"), reference, 1e-5, 1e-5));
  CHECK(torch::allclose(load_pickled_tensor(dir / "four.pt"), reference, 1e-5, 1e-5));
  // 8 optimizer steps (4 per epoch): only rank 0 writes a run folder.
  CHECK(std::filesystem::exists(dir / "two" / "fulgur_logs" / "version_0" / "metrics.csv"));
  CHECK_FALSE(std::filesystem::exists(dir / "two" / "fulgur_logs" / "version_1"));
}

TEST_CASE("ddp: process_group_backend gloo, named explicitly, equals the default (auto) on the CPU") {
  TempDir dir("ddp-gloo-backend");
  const auto automatic = run_command(fit_command(dir, "auto", "--trainer.devices 2 --data.batch_size 8"), 300);
  INFO(automatic.output);
  REQUIRE(automatic.exit_code == 0);
  const auto gloo = run_command(
      fit_command(dir, "gloo", "--trainer.devices 2 --data.batch_size 8 --trainer.process_group_backend gloo"), 300);
  INFO(gloo.output);
  REQUIRE(gloo.exit_code == 0);
  CHECK(torch::equal(load_pickled_tensor(dir / "gloo.pt"), load_pickled_tensor(dir / "auto.pt")));
}

TEST_CASE("ddp and horovod with one process (no MASTER_PORT): a group of one on a free port, same result") {
  // Lightning accepts strategy="ddp" on one device; the store then binds any free port.
  TempDir dir("ddp-one-process");
  const auto single = run_command(fit_command(dir, "single", "--data.batch_size 16"), 300);
  INFO(single.output);
  REQUIRE(single.exit_code == 0);
  for (const std::string strategy : {"ddp", "horovod"}) {
    const auto one = run_command("env -u MASTER_PORT -u MASTER_ADDR " +
                                     fit_command(dir, strategy, "--data.batch_size 16 --trainer.strategy " + strategy),
                                 300);
    INFO(one.output);
    REQUIRE(one.exit_code == 0);
    CHECK(torch::allclose(load_pickled_tensor(dir / (strategy + ".pt")),
                          load_pickled_tensor(dir / "single.pt"), 1e-6, 1e-6));
  }
}

TEST_CASE("ddp: gradient accumulation communicates once per optimizer step and still matches") {
  TempDir dir("ddp-accumulate");
  const auto one =
      run_command(fit_command(dir, "one", "--data.batch_size 8 --trainer.accumulate_grad_batches 2"), 300);
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto two = run_command(
      fit_command(dir, "two", "--trainer.devices 2 --data.batch_size 4 --trainer.accumulate_grad_batches 2"), 300);
  INFO(two.output);
  REQUIRE(two.exit_code == 0);
  CHECK(torch::allclose(load_pickled_tensor(dir / "two.pt"), load_pickled_tensor(dir / "one.pt"), 1e-5, 1e-5));
}

namespace {

/// Two ranks started by `launcher` (a command prefix) end where two ranks
/// started by fulgur's own launcher end.
void check_matches_own_launcher(const std::string& name, const std::string& launcher) {
  TempDir dir("ddp-" + name);
  const auto ours = run_command(fit_command(dir, "ours", "--trainer.devices 2 --data.batch_size 8"), 300);
  INFO(ours.output);
  REQUIRE(ours.exit_code == 0);
  const auto theirs =
      run_command(launcher + " " + fit_command(dir, "theirs", "--trainer.devices 2 --data.batch_size 8"), 300);
  INFO(theirs.output);
  REQUIRE(theirs.exit_code == 0);
  CHECK(torch::allclose(load_pickled_tensor(dir / "theirs.pt"), load_pickled_tensor(dir / "ours.pt"), 1e-6, 1e-6));
}

}  // namespace

TEST_CASE("ddp: real torchrun starts the ranks and gives the same result") {
  check_matches_own_launcher(
      "torchrun", fmt::format("{}/.venv/bin/torchrun --no-python --nproc-per-node 2 --master-port {}",
                              FULGUR_SOURCE_DIR, fulgur::testing::free_port()));
}

TEST_CASE("ddp: real mpirun (OpenMPI) starts the ranks and gives the same result") {
  // Root needs --allow-run-as-root; the rendezvous comes from MASTER_ADDR/MASTER_PORT.
  check_matches_own_launcher("mpirun",
                             "mpirun --allow-run-as-root --oversubscribe -np 2 -x MASTER_ADDR=127.0.0.1 -x "
                             "MASTER_PORT=" + std::to_string(fulgur::testing::free_port()));
}

TEST_CASE("ddp: mpirun with a FileStore rendezvous on a shared path instead of MASTER_ADDR/PORT") {
  TempDir store("ddp-filestore-path");
  check_matches_own_launcher("filestore", "mpirun --allow-run-as-root --oversubscribe -np 2 -x FULGUR_FILE_STORE=" +
                                              (store.path() / "rendezvous").string());
}

TEST_CASE("ddp: a rank killed mid-epoch brings the run down, naming the rank") {
  TempDir dir("ddp-kill");
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_command(
      fit_command(dir, "kill", "--trainer.devices 3 --data.batch_size 4 --model.kill_rank 1 --model.kill_step 3"),
      120);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(result.output);
  CHECK(result.exit_code != 0);
  CHECK(result.exit_code != 124);  // not the test's own timeout
  CHECK(result.output.find("rank 1 was killed by signal 9 (SIGKILL)") != std::string::npos);
  CHECK(seconds < 60);
}

TEST_CASE("ddp: ranks with different models fail at setup, naming both ranks and the parameter") {
  TempDir dir("ddp-mismatch");
  const auto result =
      run_command(fit_command(dir, "mismatch", "--trainer.devices 2 --data.batch_size 8 --model.mismatch_rank 1"), 120);
  INFO(result.output);
  CHECK(result.exit_code != 0);
  CHECK(result.output.find("[DataParallelStrategy::setup] parameter 'net.0.weight' has shape [33, 8] on rank 1 but [32, 8] on "
                           "rank 0") != std::string::npos);
}

TEST_CASE("ddp: with TORCH_DISTRIBUTED_DEBUG=DETAIL, a rank reducing a differently shaped tensor gets an error naming both shapes") {
  TempDir dir("ddp-bad-reduce");
  // Without it the shapes are not compared (a collective per call): the backend fails or times out.
  const auto result = run_command(
      "TORCH_DISTRIBUTED_DEBUG=DETAIL " +
          fit_command(dir, "bad", "--trainer.devices 2 --data.batch_size 8 --model.bad_reduce_rank 1"),
      120);
  INFO(result.output);
  CHECK(result.exit_code != 0);
  CHECK(result.output.find("[DataParallelStrategy::all_reduce] rank 1 passed a tensor of shape [3] but rank 0 of shape [2]") !=
        std::string::npos);
}

TEST_CASE("ddp: a parameter without gradient is an error unless find_unused_parameters") {
  TempDir dir("ddp-unused");
  const auto strict = run_command(fit_command(dir, "strict", "--trainer.devices 2 --data.batch_size 8 --model.unused true"), 120);
  INFO(strict.output);
  CHECK(strict.exit_code != 0);
  CHECK(strict.output.find("[GradientReducer::finish] parameter 'unused.bias' received no gradient in this step") !=
        std::string::npos);
  const auto lenient = run_command(
      fit_command(dir, "lenient",
                  "--trainer.devices 2 --data.batch_size 8 --model.unused true --trainer.find_unused_parameters true"),
      120);
  INFO(lenient.output);
  CHECK(lenient.exit_code == 0);
}

TEST_CASE("ddp: a synced validation metric on 3 ranks equals one process (no padded duplicates)") {
  TempDir dir("ddp-validate");
  auto validate = [&](const std::string& name, const std::string& extra) {
    const auto result = run_command(kProbe + " validate --seed_everything 7 --trainer.accelerator cpu " +
                                        "--trainer.enable_progress_bar false --data.samples 61 --data.batch_size 8 " +
                                        "--trainer.default_root_dir " + (dir.path() / name).string() + " " + extra,
                                    120);
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    const std::string csv = read_file(dir.path() / name / "fulgur_logs" / "version_0" / "metrics.csv");
    const auto last_line = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
    return std::stod(last_line.substr(last_line.rfind(',') + 1));
  };
  const double one = validate("one", "");
  const double three = validate("three", "--trainer.devices 3");
  // 61 examples over 3 ranks: 21 + 20 + 20, each counted once, weighted by batch size.
  CHECK(three == doctest::Approx(one).epsilon(1e-6));
}

TEST_CASE("ddp: launched world size and devices must agree before any group exists") {
  TempDir dir("ddp-world");
  const auto result = run_command("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 "
                                  "MASTER_PORT=29618 " +
                                      fit_command(dir, "world", "--trainer.devices 1"),
                                  60);
  CHECK(result.exit_code == 2);
  CHECK(result.output.find("num_nodes * devices = 1 * 1 = 1 does not match the world size 2 reported by") !=
        std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir / "world"));
}

}  // namespace ddp_test
