// Callbacks in a real 2-process DDP run (fulgur's launcher, Gloo over TCP):
// decisions taken on a monitored value are the same on every rank.
#include "support/metrics_csv.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <filesystem>

namespace callbacks_ddp_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe";

std::string fit_command(const TempDir& dir, const std::string& extra) {
  return kProbe + " fit --seed_everything 7 --trainer.accelerator cpu --trainer.devices 2 --data.batch_size 8 " +
         "--trainer.num_sanity_val_steps 0 --trainer.process_group_timeout 30 --trainer.default_root_dir " +
         dir.path().string() + " " + extra;
}

const std::string kEarlyStopping =
    " --trainer.callbacks '[{class_path: EarlyStopping, init_args: {monitor: rank_score, patience: 1}}]'";

}  // namespace

TEST_CASE("callbacks ddp: EarlyStopping follows rank 0's value on every rank") {
  TempDir dir("callbacks-ddp-early-stopping");
  // Rank 1 alone would stop after epoch 1; rank 0 improves, so nobody stops.
  const auto rank0_improves = run_command(
      fit_command(dir, "--trainer.max_epochs 4 --trainer.enable_progress_bar false --model.improving_rank 0" +
                           kEarlyStopping),
      120);
  INFO(rank0_improves.output);
  REQUIRE(rank0_improves.exit_code == 0);
  CHECK(rank0_improves.output.find("rank 0 stopped at epoch 4 step 16") != std::string::npos);
  CHECK(rank0_improves.output.find("rank 1 stopped at epoch 4 step 16") != std::string::npos);

  // verbose: one "New best score" line per improvement, from rank 0 alone.
  TempDir verbose_dir("callbacks-ddp-early-stopping-verbose");
  const auto verbose = run_command(
      fit_command(verbose_dir, "--trainer.max_epochs 3 --trainer.enable_progress_bar false --model.improving_rank 0 "
                               "--trainer.callbacks '[{class_path: EarlyStopping, init_args: {monitor: rank_score, "
                               "patience: 1, verbose: true}}]'"),
      120);
  INFO(verbose.output);
  REQUIRE(verbose.exit_code == 0);
  size_t lines = 0;
  for (size_t at = verbose.output.find("New best score"); at != std::string::npos;
       at = verbose.output.find("New best score", at + 1)) {
    ++lines;
  }
  CHECK(lines == 3);

  // Rank 0 does not improve: both stop after epoch 1 (2 epochs, 8 steps).
  const auto rank1_improves = run_command(
      fit_command(dir, "--trainer.max_epochs 4 --trainer.enable_progress_bar false --model.improving_rank 1" +
                           kEarlyStopping),
      120);
  INFO(rank1_improves.output);
  REQUIRE(rank1_improves.exit_code == 0);
  CHECK(rank1_improves.output.find("rank 0 stopped at epoch 2 step 8") != std::string::npos);
  CHECK(rank1_improves.output.find("rank 1 stopped at epoch 2 step 8") != std::string::npos);
}

TEST_CASE("callbacks ddp: Timer stops every rank at the same step; only rank 0 prints progress") {
  TempDir dir("callbacks-ddp-timer");
  const auto result = run_command(
      fit_command(dir, "--trainer.max_epochs 100000 --model.improving_rank 0 --trainer.callbacks "
                       "'[{class_path: Timer, init_args: {duration: 2}}, "
                       "{class_path: ProgressBar, init_args: {line_every_n_steps: 1000000}}]'"),
      120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("Timer: time limit reached. Elapsed time is 00:00:00:0") != std::string::npos);
  // Both ranks report the same epoch and step.
  const auto line_of = [&](const std::string& prefix) {
    const size_t at = result.output.find(prefix);
    REQUIRE(at != std::string::npos);
    return result.output.substr(at + prefix.size(), result.output.find('\n', at) - at - prefix.size());
  };
  CHECK(line_of("rank 0 stopped at ") == line_of("rank 1 stopped at "));
  // One progress line per epoch (the last one partial), from rank 0 alone.
  const std::string epoch_text = line_of("rank 0 stopped at epoch ");
  const int64_t epochs = std::stoll(epoch_text.substr(0, epoch_text.find(' ')));
  CHECK(epochs >= 1);
  size_t lines = 0;
  for (size_t at = 0; (at = result.output.find("/99999: ", at)) != std::string::npos; ++at) ++lines;
  CHECK(static_cast<int64_t>(lines) == epochs);
}

TEST_CASE("callbacks ddp: one profile per rank in rank 0's run folder; ThroughputMonitor's global rates") {
  TempDir dir("callbacks-ddp-profile");
  const auto result = run_command(
      fit_command(dir, "--trainer.max_epochs 1 --trainer.enable_progress_bar false --model.improving_rank 0 "
                       "--trainer.profiler simple --trainer.log_every_n_steps 1 --trainer.callbacks "
                       "'[{class_path: ThroughputMonitor, init_args: {window_size: 2}}]'"),
      120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  const std::string rank0 = fulgur::testing::read_file(run / "profile.txt");
  const std::string rank1 = fulgur::testing::read_file(run / "profile-rank1.txt");
  CHECK(rank0.find("run_training_batch") != std::string::npos);
  CHECK(rank1.find("run_training_batch") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "fulgur_logs" / "version_1"));
  // Global rate = the device's times the world size (2), in the same row.
  const std::string csv = fulgur::testing::read_file(run / "metrics.csv");
  // Each device rate with the same row's global rate (a missing global cell fails std::stod).
  const auto rates = fulgur::testing::csv_column(csv, "train/device/samples_per_sec", "train/samples_per_sec");
  const auto rows = rates.size();
  for (const auto& [global, device] : rates) {
    CHECK(std::stod(device) > 0.0);
    CHECK(std::stod(global) == doctest::Approx(2.0 * std::stod(device)));
  }
  CHECK(rows >= 1);
}

}  // namespace callbacks_ddp_test
