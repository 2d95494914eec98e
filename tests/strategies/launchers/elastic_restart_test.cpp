// torchrun --max-restarts: when a rank dies, torchrun stops the others and
// starts the whole group again; fulgur resumes the run's own last checkpoint
// and ends where an uninterrupted run ends.
#include "support/pickled_tensor.hpp"
#include "support/test_support.hpp"

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <filesystem>

namespace elastic_restart_test {

using fulgur::testing::last_csv_value;
using fulgur::testing::load_pickled_tensor;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

std::string torchrun_fit(const TempDir& dir, const std::string& name, const std::string& extra) {
  const int port = fulgur::testing::free_port();
  return std::string(FULGUR_SOURCE_DIR) + "/.venv/bin/torchrun --no-python --nnodes 1 --nproc-per-node 2 " +
         "--max-restarts 2 --master-port " + std::to_string(port) + " " + FULGUR_BINARY_DIR +
         "/bin/ddp_probe fit --seed_everything 7 --trainer.accelerator cpu --trainer.devices 2 " +
         "--trainer.max_epochs 3 --trainer.deterministic true --data.batch_size 8 " +
         "--trainer.enable_progress_bar false --trainer.num_sanity_val_steps 0 --trainer.log_every_n_steps 1 " +
         "--trainer.process_group_timeout 60 --trainer.default_root_dir " + (dir.path() / name).string() +
         " --model.output " + (dir.path() / (name + ".pt")).string() + " " + extra;
}

}  // namespace

TEST_CASE("torchrun --max-restarts: a rank killed mid-epoch restarts the group, which resumes and ends equal") {
  TempDir dir("elastic-restart");
  const auto straight = run_command(torchrun_fit(dir, "straight", ""), 300);
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);

  // 4 steps per epoch: rank 1 dies during step 6, after epoch 1 wrote last.ckpt (step 4).
  const auto restarted = run_command(torchrun_fit(dir, "restarted", "--model.kill_rank 1 --model.kill_step 6"), 300);
  INFO(restarted.output);
  REQUIRE(restarted.exit_code == 0);
  CHECK(restarted.output.find("fulgur: restarted job: resuming from") != std::string::npos);

  // Same parameters, same last step, and every step once in the continued metrics.csv.
  CHECK(torch::allclose(load_pickled_tensor(dir / "restarted.pt"), load_pickled_tensor(dir / "straight.pt"), 1e-6,
                        1e-6));
  const auto csv = [&](const std::string& name) {
    return read_file(dir / name / "fulgur_logs" / "version_0" / "metrics.csv");
  };
  const std::string straight_csv = csv("straight");
  const std::string restarted_csv = csv("restarted");
  CHECK(last_csv_value(straight_csv, "step") > 0);
  CHECK(restarted_csv == straight_csv);
  CHECK_FALSE(std::filesystem::exists(dir / "restarted" / "fulgur_logs" / "version_1"));
}

}  // namespace elastic_restart_test
