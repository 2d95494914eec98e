#include "support/tiny_modules.hpp"
#include "support/test_support.hpp"

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <doctest/doctest.h>

namespace on_exception_checkpoint_test {

using namespace fulgur;
using fulgur::testing::FailingModule;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

torch::Tensor weights(RecordingModule& model) {
  return torch::cat({model.linear->weight.flatten(), model.linear->bias});
}

/// Runs 2 epochs of 6 batches with `callback`, failing at step 3; then a
/// fresh process-like resume from `file`; the weights end as an uninterrupted run's.
void fail_then_resume(const TempDir& dir, const std::shared_ptr<Callback>& callback,
                      const std::function<std::filesystem::path()>& file) {
  RegressionData data(6, 0);
  // The three modules start from the same weights.
  torch::manual_seed(0);
  RecordingModule reference;
  Trainer(quiet_options(dir / "reference").max_epochs(2)).fit(reference, data);

  torch::manual_seed(0);
  FailingModule failing(3);
  Trainer first(quiet_options(dir.path()).max_epochs(2), {callback});
  CHECK_THROWS_WITH_AS(first.fit(failing, data), "injected failure", std::runtime_error);
  const std::filesystem::path path = file();
  REQUIRE(std::filesystem::exists(path));
  const Checkpoint checkpoint = CheckpointIO::load(path);
  CHECK(checkpoint.at("global_step").toInt() == 3);
  CHECK(checkpoint.at("epoch").toInt() == 0);

  torch::manual_seed(1);  // other weights: the checkpoint's must replace them
  RecordingModule resumed;
  Trainer second(quiet_options(dir.path()).max_epochs(2));
  second.fit(resumed, data, path.string());
  CHECK(second.state().global_step() == 12);
  CHECK(resumed.count("training_step") == 9);  // batches 3..5 of epoch 0, then epoch 1
  CHECK(torch::allclose(weights(resumed), weights(reference), 1e-6, 1e-7));
}

}  // namespace

TEST_CASE("on exception checkpoint: a failure at step 3 leaves a checkpoint that resumes to the same weights") {
  TempDir dir("on-exception");
  auto callback =
      std::make_shared<OnExceptionCheckpoint>(OnExceptionCheckpointOptions().dirpath((dir / "ck").string()));
  fail_then_resume(dir, callback, [&] { return dir / "ck" / "on_exception.ckpt"; });
  CHECK(callback->ckpt_path() == dir / "ck" / "on_exception.ckpt");

  // A fit that ends normally removes the stale file.
  RecordingModule model;
  RegressionData data(2, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1), {callback});
  trainer.fit(model, data);
  CHECK_FALSE(std::filesystem::exists(dir / "ck" / "on_exception.ckpt"));
  CHECK_THROWS_WITH_AS(OnExceptionCheckpoint(OnExceptionCheckpointOptions().filename("")),
                       "[OnExceptionCheckpointOptions] filename must be given (it has no default), got \"\"",
                       std::invalid_argument);
}

TEST_CASE("model checkpoint save_on_exception: the failing step's checkpoint, and last.ckpt, resume") {
  TempDir dir("save-on-exception");
  auto callback = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions().dirpath((dir / "ck").string()).save_on_exception(true).save_last(true));
  fail_then_resume(dir, callback, [&] { return dir / "ck" / "epoch=0-step=3.ckpt"; });
  CHECK(std::filesystem::exists(dir / "ck" / "last.ckpt"));
  CHECK(CheckpointIO::load(dir / "ck" / "last.ckpt").at("global_step").toInt() == 3);

  // Off by default: nothing is written for the failing step.
  TempDir off("save-on-exception-off");
  FailingModule failing(1);
  RegressionData data(4, 0);
  Trainer trainer(quiet_options(off.path()).max_epochs(1),
                  {std::make_shared<ModelCheckpoint>(ModelCheckpointOptions().dirpath((off / "ck").string()))});
  CHECK_THROWS(trainer.fit(failing, data));
  CHECK_FALSE(std::filesystem::exists(off / "ck"));
}

}  // namespace on_exception_checkpoint_test
