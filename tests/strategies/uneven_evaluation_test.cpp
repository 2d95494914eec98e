// Evaluation shards are not padded, so with fewer samples than ranks some
// ranks run no batch at all. They still take part in every sync the others
// make (sync_dist values, Metric objects, FSDP's gathers) and report the
// same synced values: 3 ranks under ddp, horovod and fsdp agree with one
// process on 0, 1 and 2 validation samples, and a fit with a rank that has
// nothing to validate finishes.
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <fmt/format.h>

namespace uneven_evaluation_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kProbe = std::string(FULGUR_BINARY_DIR) + "/bin/ddp_probe";

fulgur::testing::CommandResult validate(const TempDir& dir, const std::string& strategy, int64_t devices,
                                        int64_t val_samples) {
  return run_command(fmt::format("{} validate --seed_everything 3 --trainer.accelerator cpu --trainer.devices {} "
                                 "--trainer.strategy {} --trainer.process_group_timeout 30 --trainer.logger false "
                                 "--trainer.enable_progress_bar false --trainer.default_root_dir {} "
                                 "--data.batch_size 1 --data.val_samples {} --model.val_metric true",
                                 kProbe, devices, strategy, dir.path().string(), val_samples),
                     120);
}

// Rank 0's "validate: name=value ..." line.
std::string metrics_line(const std::string& output) {
  const size_t start = output.find("validate:");
  if (start == std::string::npos) return "";
  return output.substr(start, output.find('\n', start) - start);
}

}  // namespace

TEST_CASE("uneven evaluation: ranks with no batch take part in every sync") {
  TempDir dir("uneven-evaluation");
  for (const int64_t samples : {0, 1, 2}) {
    const auto single = validate(dir, "auto", 1, samples);
    INFO(single.output);
    REQUIRE(single.exit_code == 0);
    const std::string expected = metrics_line(single.output);
    if (samples > 0) {
      CHECK(expected.find("val_loss=") != std::string::npos);
      CHECK(expected.find("val_max_loss=") != std::string::npos);
      CHECK(expected.find("val_mean_loss=") != std::string::npos);
    }
    for (const std::string strategy : {"ddp", "horovod", "fsdp"}) {
      CAPTURE(samples);
      CAPTURE(strategy);
      const auto three = validate(dir, strategy, 3, samples);
      INFO(three.output);
      REQUIRE(three.exit_code == 0);
      CHECK(metrics_line(three.output) == expected);
    }
  }
}

TEST_CASE("uneven evaluation: a fit whose third rank has nothing to validate finishes") {
  TempDir dir("uneven-evaluation-fit");
  const auto fit = run_command(
      fmt::format("{} fit --seed_everything 3 --trainer.accelerator cpu --trainer.devices 3 --trainer.max_epochs 2 "
                  "--trainer.limit_train_batches 2 --trainer.process_group_timeout 30 --trainer.logger false "
                  "--trainer.enable_progress_bar false --trainer.enable_checkpointing false "
                  "--trainer.default_root_dir {} --data.batch_size 1 --data.val_samples 2 --model.val_metric true",
                  kProbe, dir.path().string()),
      120);
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK(fit.output.find("val_mean_loss=") != std::string::npos);
}

}  // namespace uneven_evaluation_test
