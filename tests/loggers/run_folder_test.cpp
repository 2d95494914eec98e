// Run folders under concurrency: a version is claimed by creating its
// folder, so runs started together in one root never share one; loggers of
// one run that share a root and name share the version claimed for it; and
// ckpt_path "last" finds the newest checkpoint under the root whatever the
// logger setting.
#include "support/metrics_csv.hpp"
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/fulgur.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/loggers/run_folder.hpp>

#include <doctest/doctest.h>

#include <set>
#include <thread>

namespace run_folder_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kCinic = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10";
const std::string kDigits = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";

std::set<std::string> versions_in(const std::filesystem::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("run folders: claim_version creates the folder and skips taken numbers") {
  TempDir dir("claim");
  CHECK(claim_version(dir / "logs") == 0);
  CHECK(claim_version(dir / "logs") == 1);
  std::filesystem::create_directories(dir / "logs" / "version_5");
  CHECK(claim_version(dir / "logs") == 6);
  CHECK(versions_in(dir / "logs") == std::set<std::string>{"version_0", "version_1", "version_5", "version_6"});
}

TEST_CASE("run folders: six fits started at once in one root get six versions, each complete") {
  TempDir dir("concurrent-runs");
  constexpr int kRuns = 6;
  std::vector<fulgur::testing::CommandResult> results(kRuns);
  std::vector<std::thread> runs;
  for (int i = 0; i < kRuns; ++i) {
    runs.emplace_back([&, i] {
      results[static_cast<size_t>(i)] = run_command(
          kCinic + " fit --config " + FULGUR_SOURCE_DIR + "/examples/cinic10/digits.yaml --data.root " + kDigits +
              " --data.num_workers 0 --test_after_fit false --trainer.max_epochs 2 --trainer.limit_train_batches 4"
              " --trainer.limit_val_batches 2 --trainer.enable_progress_bar false --trainer.default_root_dir " +
              dir.path().string(),
          300);
    });
  }
  for (auto& run : runs) run.join();
  for (const auto& result : results) {
    INFO(result.output);
    CHECK(result.exit_code == 0);
  }
  const auto logs = dir.path() / "fulgur_logs";
  std::set<std::string> expected;
  for (int i = 0; i < kRuns; ++i) expected.insert("version_" + std::to_string(i));
  REQUIRE(versions_in(logs) == expected);
  for (const auto& version : expected) {
    CAPTURE(version);
    const std::string csv = read_file(logs / version / "metrics.csv");
    CHECK(fulgur::testing::csv_column(csv, "val_acc").size() == 2);  // both epochs, one run's rows only
    CHECK(read_file(logs / version / "hparams.yaml").find("max_epochs: 2") != std::string::npos);
    const auto last = CheckpointIO::load(logs / version / "checkpoints" / "last.ckpt");
    CHECK(last.at("global_step").toInt() == 8);
  }
}

TEST_CASE("run folders: loggers sharing a root share the claimed version; ckpt_path last finds it without a logger") {
  TempDir dir("shared-version");
  testing::RegressionData data(3, 1);
  std::filesystem::create_directories(dir / "fulgur_logs" / "version_0");  // an earlier run's
  {
    testing::RecordingModule model;
    auto csv = std::make_shared<CSVLogger>(dir.path(), "fulgur_logs");
    auto tb = std::make_shared<TensorBoardLogger>(dir.path(), "fulgur_logs");
    Trainer trainer(quiet_options(dir.path()).max_epochs(1), {}, {csv, tb});
    trainer.fit(model, data);
    CHECK(csv->log_dir() == dir.path() / "fulgur_logs" / "version_1");
    CHECK(tb->log_dir() == csv->log_dir());
    CHECK(trainer.log_dir() == csv->log_dir());
  }
  CHECK(versions_in(dir / "fulgur_logs") == std::set<std::string>{"version_0", "version_1"});
  {
    // logger false: checkpoints go to <root>/checkpoints, yet "last" is the newest of the run's.
    testing::RecordingModule model;
    Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false));
    trainer.fit(model, data, "last");
    CHECK(model.count("training_step") == 3);  // resumed after epoch 1: only epoch 2 ran
  }
}

TEST_CASE("run folders: a run resumed with ckpt_path last continues its own version and claims none") {
  TempDir dir("resume-version");
  testing::RegressionData data(3, 1);
  {
    testing::RecordingModule model;
    Trainer trainer(quiet_options(dir.path()).max_epochs(1));
    trainer.fit(model, data);
  }
  testing::RecordingModule model;
  Trainer trainer(quiet_options(dir.path()).max_epochs(2));
  trainer.fit(model, data, "last");  // looking for "last" must not claim a folder
  CHECK(trainer.log_dir() == dir.path() / "fulgur_logs" / "version_0");
  CHECK(versions_in(dir / "fulgur_logs") == std::set<std::string>{"version_0"});
}

}  // namespace run_folder_test
