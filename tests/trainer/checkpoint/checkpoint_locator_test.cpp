// fulgur::CheckpointLocator: "last" is the newest loadable checkpoint in the
// run folders and the ModelCheckpoint folders (a corrupt one skipped),
// "best" the best model a ModelCheckpoint recorded, anything else a path;
// it reads files and writes none.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/trainer/checkpoint/checkpoint_locator.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

namespace checkpoint_locator_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

namespace {

/// One epoch of two batches under `root`: its default ModelCheckpoint
/// writes <root>/fulgur_logs/version_0/checkpoints/last.ckpt.
std::filesystem::path fit_once(const std::filesystem::path& root, std::vector<std::shared_ptr<Callback>> callbacks = {}) {
  testing::RecordingModule model;
  testing::RegressionData data(2, 0);
  Trainer trainer(testing::quiet_options(root.string()).max_epochs(1), std::move(callbacks));
  trainer.fit(model, data);
  return root / "fulgur_logs" / "version_0" / "checkpoints" / "last.ckpt";
}

/// Makes `file` the newest by its modification time.
void touch_newer(const std::filesystem::path& file, int seconds) {
  std::filesystem::last_write_time(file, std::filesystem::file_time_type::clock::now() + std::chrono::seconds(seconds));
}

}  // namespace

TEST_CASE("checkpoint_locator: a path is itself; 'last' is the newest loadable checkpoint, a corrupt one skipped") {
  TempDir dir("checkpoint-locator-last");
  const auto last = fit_once(dir.path());
  REQUIRE(std::filesystem::exists(last));

  // A fresh Trainer (a new process) over the same root.
  Trainer trainer(testing::quiet_options(dir.path().string()));
  const CheckpointLocator locator(trainer);
  CHECK(locator.resolve("elsewhere/my.ckpt") == "elsewhere/my.ckpt");
  CHECK(locator.resolve("last") == last);

  // A newer torn copy is skipped; the finder's filter decides among the loadable ones.
  const std::string bytes = read_file(last);
  const auto torn = last.parent_path() / "zz-newer.ckpt";
  std::ofstream(torn, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  touch_newer(torn, 10);
  CHECK(locator.resolve("last") == last);
  CHECK_FALSE(locator.find_newest([](const Checkpoint&, const std::filesystem::path&) { return false; }).has_value());
  CHECK(locator.find_newest([](const Checkpoint& checkpoint, const std::filesystem::path&) {
    return checkpoint.contains("state_dict");
  }) == last);
}

TEST_CASE("checkpoint_locator: a ModelCheckpoint's own folder is searched too") {
  TempDir dir("checkpoint-locator-folders");
  const auto last = fit_once(dir.path());
  const auto own = dir / "own";
  std::filesystem::create_directories(own);
  std::filesystem::copy_file(last, own / "copy.ckpt");
  touch_newer(own / "copy.ckpt", 20);
  auto mc = std::make_shared<ModelCheckpoint>(ModelCheckpointOptions().dirpath(own.string()));
  Trainer with_folder(testing::quiet_options(dir.path().string()), {mc});
  CHECK(CheckpointLocator(with_folder).resolve("last") == own / "copy.ckpt");
  // Without that callback the folder is unknown.
  Trainer without(testing::quiet_options(dir.path().string()));
  CHECK(CheckpointLocator(without).resolve("last") == last);
}

TEST_CASE("checkpoint_locator: 'best' in a new Trainer is the best model its ModelCheckpoint recorded in 'last'") {
  TempDir dir("checkpoint-locator-best");
  const auto last = fit_once(dir.path());
  Trainer trainer(testing::quiet_options(dir.path().string()));
  const auto best = CheckpointLocator(trainer).resolve("best");
  // Without a monitor the newest top-k file is the best: beside last.ckpt, not it.
  CHECK(best != last);
  CHECK(best.parent_path() == last.parent_path());
  CHECK(std::filesystem::exists(best));
}

TEST_CASE("checkpoint_locator: nothing to find, or no best recorded, is one CheckpointError naming why") {
  TempDir dir("checkpoint-locator-errors");
  // Only last.ckpt: this ModelCheckpoint keeps no best model.
  const auto options = ModelCheckpointOptions().save_top_k(0).save_last(true);
  {
    Trainer trainer(testing::quiet_options(dir.path().string()), {std::make_shared<ModelCheckpoint>(options)});
    CHECK_THROWS_WITH_AS(CheckpointLocator(trainer).resolve("last"), doctest::Contains("no loadable checkpoint in"),
                         CheckpointError);
  }
  fit_once(dir.path(), {std::make_shared<ModelCheckpoint>(options)});
  Trainer trainer(testing::quiet_options(dir.path().string()), {std::make_shared<ModelCheckpoint>(options)});
  CHECK_THROWS_WITH_AS(CheckpointLocator(trainer).resolve("best"), doctest::Contains("records no best model"),
                       CheckpointError);
}

}  // namespace checkpoint_locator_test
