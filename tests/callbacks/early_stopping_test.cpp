#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>

namespace early_stopping_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RegressionData;
using fulgur::testing::ScriptedScoreModule;
using fulgur::testing::TempDir;

namespace {

struct Outcome {
  int64_t epochs_run;
  std::shared_ptr<EarlyStopping> callback;
};

Outcome run_with(std::vector<double> values, EarlyStoppingOptions options, int64_t max_epochs = 10,
                 TrainerOptions trainer_options = TrainerOptions()) {
  TempDir dir("early-stopping");
  ScriptedScoreModule model(std::move(values));
  RegressionData data(4, 2);
  auto stop = std::make_shared<EarlyStopping>(options);
  trainer_options.default_root_dir(dir.path()).enable_progress_bar(false).accelerator(AcceleratorKind::Cpu).logger(false);
  trainer_options.max_epochs(max_epochs).num_sanity_val_steps(0);
  Trainer trainer(trainer_options, {stop});
  trainer.fit(model, data);
  return {trainer.state().current_epoch(), stop};
}

}  // namespace

TEST_CASE("early stopping: patience counts checks without improvement") {
  const auto out = run_with({5, 4, 3, 3.5, 3.2, 1, 1}, EarlyStoppingOptions("val_score").patience(2));
  // Best 3 at epoch 2; epochs 3 and 4 do not improve: stop after epoch 4.
  CHECK(out.epochs_run == 5);
  CHECK(out.callback->stopped_epoch() == 4);
  CHECK(out.callback->wait_count() == 2);
  CHECK(out.callback->best_score() == doctest::Approx(3.0));
  CHECK(out.callback->stopping_reason().find("did not improve in the last 2 records") != std::string::npos);
}

TEST_CASE("early stopping: without a plateau training runs to max_epochs") {
  const auto out = run_with({9, 8, 7, 6, 5, 4}, EarlyStoppingOptions("val_score").patience(1), 6);
  CHECK(out.epochs_run == 6);
  CHECK(out.callback->stopped_epoch() == 0);
  CHECK(out.callback->stopping_reason().empty());
}

TEST_CASE("early stopping: min_delta ignores small improvements") {
  const std::vector<double> values = {5, 4.95, 4.9, 4.85, 4.8};
  CHECK(run_with(values, EarlyStoppingOptions("val_score").patience(2).min_delta(0.1)).epochs_run == 3);
  CHECK(run_with(values, EarlyStoppingOptions("val_score").patience(2), 5).epochs_run == 5);
  // The sign of min_delta does not matter (Lightning takes its absolute value too).
  CHECK(run_with(values, EarlyStoppingOptions("val_score").patience(2).min_delta(-0.1)).epochs_run == 3);
}

TEST_CASE("early stopping: mode max with a stopping threshold") {
  const auto out =
      run_with({0.5, 0.7, 0.9, 0.95}, EarlyStoppingOptions("val_score").mode(MonitorMode::Max).patience(5).stopping_threshold(0.85));
  CHECK(out.epochs_run == 3);
  CHECK(out.callback->stopping_reason().find("Stopping threshold reached") != std::string::npos);
}

TEST_CASE("early stopping: divergence threshold") {
  const auto out = run_with({1, 0.5, 20, 0.1}, EarlyStoppingOptions("val_score").patience(5).divergence_threshold(10));
  CHECK(out.epochs_run == 3);
  CHECK(out.callback->stopping_reason().find("Divergence threshold reached") != std::string::npos);
}

TEST_CASE("early stopping: a non-finite metric stops unless check_finite is off") {
  const double nan = std::nan("");
  const auto out = run_with({1, nan, 0.5}, EarlyStoppingOptions("val_score").patience(5));
  CHECK(out.epochs_run == 2);
  CHECK(out.callback->stopping_reason().find("is not finite") != std::string::npos);
  CHECK(out.callback->best_score() == doctest::Approx(1.0));
  // Unchecked, NaN never compares better: it only counts as no improvement.
  CHECK(run_with({1, nan, nan, nan}, EarlyStoppingOptions("val_score").patience(2).check_finite(false), 6).epochs_run ==
        3);
}

TEST_CASE("early stopping: a missing metric is an error when strict, skipped otherwise") {
  TempDir dir("early-stopping-strict");
  ScriptedScoreModule model({1});
  RegressionData data(4, 2);
  Trainer strict(quiet_options(dir.path()).max_epochs(3).logger(false),
                 {std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_acc"))});
  try {
    strict.fit(model, data);
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    CHECK(message.find("[EarlyStopping] early stopping conditioned on metric 'val_acc'") == 0);
    CHECK(message.find("val_score") != std::string::npos);
  }
  auto lenient = std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_acc").strict(false).patience(0));
  Trainer trainer(quiet_options(dir.path()).max_epochs(3).logger(false), {lenient});
  trainer.fit(model, data);
  CHECK(trainer.state().current_epoch() == 3);
}

TEST_CASE("early stopping: checks after every validation when validation runs within the epoch") {
  // Two validations per epoch; the score depends on the epoch only, so the
  // second check of epoch 0 already does not improve.
  const auto out = run_with({5, 4, 3}, EarlyStoppingOptions("val_score").patience(1), 10,
                            TrainerOptions().val_check_interval(0.5));
  CHECK(out.epochs_run == 1);
  CHECK(out.callback->stopped_epoch() == 0);
  // Forced to the epoch end, it sees one improving value per epoch.
  const auto at_epoch_end = run_with({5, 4, 3}, EarlyStoppingOptions("val_score").patience(1).check_on_train_epoch_end(true),
                                     3, TrainerOptions().val_check_interval(0.5));
  CHECK(at_epoch_end.epochs_run == 3);
  CHECK(at_epoch_end.callback->stopped_epoch() == 0);
}

namespace {

/// Logs the epoch number as an epoch-only training metric, and a constant from
/// its own on_train_epoch_end: both only exist once the epoch is over.
class EpochMetricModule : public fulgur::testing::RecordingModule {
 public:
  torch::Tensor training_step(const Batch& batch, int64_t idx) override {
    const double value = trainer()->state().current_epoch() < 2 ? 10.0 - trainer()->state().current_epoch() : 10.0;
    log("epoch_score", torch::tensor(value), {.on_step = false, .on_epoch = true});
    return RecordingModule::training_step(batch, idx);
  }
  void on_train_epoch_end() override { log("hook_score", torch::tensor(1.0), {.on_step = false, .on_epoch = true}); }
};

}  // namespace

TEST_CASE("early stopping: at the epoch end it sees the epoch aggregates and what the module's hook logged") {
  TempDir dir("early-stopping-train");
  EpochMetricModule model;
  RegressionData data(4, 0);
  auto on_aggregate = std::make_shared<EarlyStopping>(EarlyStoppingOptions("epoch_score").patience(2));
  auto on_hook = std::make_shared<EarlyStopping>(EarlyStoppingOptions("hook_score").patience(3));
  Trainer trainer(quiet_options(dir.path()).max_epochs(10).logger(false), {on_aggregate, on_hook});
  trainer.fit(model, data);
  // epoch_score: 10, 9, 10, 10 -> best 9 at epoch 1, no improvement in epochs 2 and 3.
  CHECK(trainer.state().current_epoch() == 4);
  CHECK(on_aggregate->stopped_epoch() == 3);
  CHECK(on_aggregate->best_score() == doctest::Approx(9.0));
  CHECK(on_hook->wait_count() == 3);
}

TEST_CASE("early stopping: state_dict carries wait count, best score and stopped epoch") {
  EarlyStopping source(EarlyStoppingOptions("val_score").patience(3));
  CHECK(source.state_key() == "EarlyStopping{'monitor': 'val_score', 'mode': 'min'}");
  const auto fresh = source.state_dict();
  CHECK(std::isinf(fresh.at("best_score").toDouble()));

  // A run restored with 2 of 3 patience used stops at its first non-improvement.
  const auto first = run_with({3, 4, 4}, EarlyStoppingOptions("val_score").patience(3), 2);
  auto state = first.callback->state_dict();
  CHECK(state.at("wait_count").toInt() == 1);
  CHECK(state.at("best_score").toDouble() == doctest::Approx(3.0));
  state["wait_count"] = int64_t{2};
  TempDir dir("early-stopping-resume");
  ScriptedScoreModule model({5});
  RegressionData data(4, 2);
  auto resumed = std::make_shared<EarlyStopping>(EarlyStoppingOptions("val_score").patience(3));
  resumed->load_state_dict(state);
  Trainer trainer(quiet_options(dir.path()).max_epochs(10).num_sanity_val_steps(0).logger(false), {resumed});
  trainer.fit(model, data);
  CHECK(trainer.state().current_epoch() == 1);
  CHECK(resumed->wait_count() == 3);
  CHECK_THROWS_WITH_AS(resumed->load_state_dict({{"wait_count", int64_t{1}}}),
                       doctest::Contains("has no 'stopped_epoch'"), std::runtime_error);
}

TEST_CASE("early stopping: invalid options are named") {
  CHECK_THROWS_WITH_AS(parse_choice<MonitorMode>("low"), "must be one of min, max, got 'low'", std::invalid_argument);
  // A near miss names the choice it was probably meant to be.
  CHECK_THROWS_WITH_AS(parse_choice<MonitorMode>("mx"), "must be one of min, max, got 'mx'; did you mean 'max'?",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(EarlyStopping(EarlyStoppingOptions("x").patience(-1)),
                       "[EarlyStoppingOptions] patience must be >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(EarlyStopping(EarlyStoppingOptions{}),
                       doctest::Contains("[EarlyStoppingOptions] monitor must be given"), std::invalid_argument);
}

}  // namespace early_stopping_test
