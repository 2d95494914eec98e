#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <doctest/doctest.h>

#include <iostream>
#include <sstream>

namespace loops_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

TEST_CASE("loops: global_step counts optimizer steps under gradient accumulation") {
  TempDir dir("loops-accumulate");
  RecordingModule model;
  RegressionData data(10, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).accumulate_grad_batches(3).logger(false));
  trainer.fit(model, data);
  // 10 batches with windows of 3: steps after batches 3, 6, 9 and at the epoch's last batch.
  CHECK(trainer.state().global_step() == 8);
  CHECK(model.count("optimizer_step") == 8);
  CHECK(model.count("training_step") == 20);
  CHECK(trainer.state().current_epoch() == 2);
}

TEST_CASE("loops: max_steps stops mid-epoch") {
  TempDir dir("loops-max-steps");
  RecordingModule model;
  RegressionData data(10, 0);
  Trainer trainer(quiet_options(dir.path()).max_steps(13).logger(false));
  trainer.fit(model, data);
  CHECK(trainer.state().global_step() == 13);
  CHECK(model.count("training_step") == 13);
  CHECK(model.count("on_train_epoch_end") == 2);
}

TEST_CASE("loops: a second fit with nothing left to do says so in one line and trains nothing") {
  TempDir dir("loops-second-fit");
  RecordingModule model;
  RegressionData data(4, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false));
  trainer.fit(model, data);
  REQUIRE(model.count("training_step") == 8);
  std::ostringstream out;
  std::streambuf* previous = std::cout.rdbuf(out.rdbuf());
  try {
    trainer.fit(model, data);
  } catch (...) {
    std::cout.rdbuf(previous);
    throw;
  }
  std::cout.rdbuf(previous);
  CHECK(out.str().find("fulgur: fit has nothing to do: max_epochs=2 reached\n") != std::string::npos);
  CHECK(model.count("training_step") == 8);
  CHECK(trainer.state().global_step() == 8);
}

TEST_CASE("loops: limit_train_batches and limit_val_batches as counts and fractions") {
  TempDir dir("loops-limits");
  RecordingModule model;
  RegressionData data(10, 8);
  Trainer trainer(quiet_options(dir.path())
                      .max_epochs(3)
                      .limit_train_batches(0.5)
                      .limit_val_batches(3)
                      .num_sanity_val_steps(0)
                      .logger(false));
  trainer.fit(model, data);
  CHECK(trainer.state().num_training_batches() == 5);
  CHECK(model.count("training_step") == 15);
  CHECK(model.count("validation_step") == 9);
  CHECK(trainer.state().global_step() == 15);
}

TEST_CASE("loops: sanity check runs num_sanity_val_steps batches and logs nothing") {
  TempDir dir("loops-sanity");
  RecordingModule model;
  RegressionData data(4, 5);
  Trainer trainer(quiet_options(dir.path()).max_epochs(0).num_sanity_val_steps(2));
  trainer.fit(model, data);
  CHECK(model.count("validation_step") == 2);
  CHECK(trainer.state().callback_metrics().count("val_loss") == 0);
  CHECK(trainer.state().global_step() == 0);
}

TEST_CASE("loops: val_check_interval as a fraction validates several times per epoch") {
  TempDir dir("loops-vci-fraction");
  RecordingModule model;
  RegressionData data(10, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).val_check_interval(0.25).num_sanity_val_steps(0).logger(false));
  trainer.fit(model, data);
  // every int(10 * 0.25) = 2 batches -> 5 validations per epoch
  CHECK(model.count("on_validation_start") == 10);
  CHECK(model.count("validation_step") == 20);
}

TEST_CASE("loops: val_check_interval as a count, within epochs and across them") {
  TempDir dir("loops-vci-count");
  {
    RecordingModule model;
    RegressionData data(10, 1);
    Trainer trainer(quiet_options(dir.path()).max_epochs(2).val_check_interval(3).num_sanity_val_steps(0).logger(false));
    trainer.fit(model, data);
    CHECK(model.count("on_validation_start") == 6);  // batches 3, 6, 9 of each epoch
  }
  {
    RecordingModule model;
    RegressionData data(10, 1);
    Trainer trainer(quiet_options(dir.path())
                        .max_epochs(2)
                        .val_check_interval(4)
                        .check_val_every_n_epoch(std::nullopt)
                        .num_sanity_val_steps(0)
                        .logger(false));
    trainer.fit(model, data);
    CHECK(model.count("on_validation_start") == 5);  // total batches 4, 8, 12, 16, 20
  }
  {
    RecordingModule model;
    RegressionData data(4, 1);
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).val_check_interval(6).num_sanity_val_steps(0).logger(false));
    CHECK_THROWS_WITH_AS(trainer.fit(model, data),
                         "[FitLoop::run] val_check_interval (6) must not exceed the number of training batches (4) "
                         "unless check_val_every_n_epoch is null",
                         std::invalid_argument);
  }
}

TEST_CASE("loops: check_val_every_n_epoch skips epochs") {
  TempDir dir("loops-every-n");
  RecordingModule model;
  RegressionData data(3, 2);
  Trainer trainer(quiet_options(dir.path()).max_epochs(6).check_val_every_n_epoch(3).num_sanity_val_steps(0).logger(false));
  trainer.fit(model, data);
  CHECK(model.count("on_validation_start") == 2);  // after epochs 2 and 5 (0-based)
}

TEST_CASE("loops: hooks run in Lightning's order") {
  TempDir dir("loops-order");
  RecordingModule model;
  RegressionData data(2, 1);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).num_sanity_val_steps(0).logger(false));
  trainer.fit(model, data);
  const std::vector<std::string> expected = {"on_fit_start",        "on_train_epoch_start", "training_step",
                                             "optimizer_step",      "training_step",        "optimizer_step",
                                             "on_validation_start", "validation_step",      "on_train_epoch_end",
                                             "on_fit_end"};
  CHECK(model.events == expected);
}

TEST_CASE("loops: request_stop is honoured only after min_epochs") {
  struct StopAtOnce : Callback {
    std::string state_key() const override { return "StopAtOnce"; }
    void on_train_batch_end(Trainer& t, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override {
      t.request_stop();
    }
  };
  TempDir dir("loops-stop");
  RecordingModule model;
  RegressionData data(5, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(10).min_epochs(3).logger(false),
                  {std::make_shared<StopAtOnce>()});
  trainer.fit(model, data);
  // As in Lightning, the stop waits until min_epochs full epochs have run.
  CHECK(trainer.state().current_epoch() == 3);
  CHECK(model.count("training_step") == 15);
  RecordingModule eager;
  Trainer no_minimum(quiet_options(dir.path()).max_epochs(10).logger(false), {std::make_shared<StopAtOnce>()});
  no_minimum.fit(eager, data);
  CHECK(no_minimum.state().current_epoch() == 1);
  CHECK(eager.count("training_step") == 1);
}

TEST_CASE("loops: validate, test and predict run their own loops") {
  TempDir dir("loops-eval");
  RecordingModule model;
  RegressionData data(2, 3);
  Trainer trainer(quiet_options(dir.path()).logger(false).limit_test_batches(2));
  const auto val = trainer.validate(model, data);
  CHECK(val.count("val_loss") == 1);
  CHECK(model.count("validation_step") == 3);
  const auto test = trainer.test(model, data);
  CHECK(test.count("test_loss") == 1);
  CHECK(model.count("test_step") == 2);
  const auto predictions = trainer.predict(model, data);
  REQUIRE(predictions.size() == 3);
  CHECK(predictions[0].sizes() == torch::IntArrayRef({8, 1}));
  CHECK_FALSE(predictions[0].requires_grad());
}

TEST_CASE("loops: a failing step reaches on_exception once and propagates") {
  struct Boom : testing::RecordingModule {
    torch::Tensor training_step(const Batch&, int64_t batch_idx) override {
      if (batch_idx == 1) throw std::runtime_error("boom at batch 1");
      return linear->weight.sum();
    }
  };
  struct Watcher : Callback {
    int exceptions = 0;
    int teardowns = 0;
    std::string state_key() const override { return "Watcher"; }
    void on_exception(Trainer&, LightningModule&, const std::exception_ptr&) override { ++exceptions; }
    void teardown(Trainer&, LightningModule&) override { ++teardowns; }
  };
  TempDir dir("loops-exception");
  Boom model;
  RegressionData data(3, 0);
  auto watcher = std::make_shared<Watcher>();
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false), {watcher});
  CHECK_THROWS_WITH_AS(trainer.fit(model, data), "boom at batch 1", std::runtime_error);
  CHECK(watcher->exceptions == 1);
  CHECK(watcher->teardowns == 1);
  CHECK(model.trainer() == nullptr);
}

TEST_CASE("loops: training_step must return a loss that requires grad") {
  struct NoGrad : testing::RecordingModule {
    torch::Tensor training_step(const Batch&, int64_t) override { return torch::zeros({}); }
  };
  TempDir dir("loops-no-grad");
  NoGrad model;
  RegressionData data(2, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
  CHECK_THROWS_WITH_AS(trainer.fit(model, data),
                       "[TrainingEpochLoop::advance] training_step must return a scalar loss that requires grad "
                       "(batch 0), got shape [] requires_grad=false",
                       std::runtime_error);
}

}  // namespace loops_test
