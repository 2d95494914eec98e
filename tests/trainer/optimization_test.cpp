#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <doctest/doctest.h>

namespace optimization_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

double lr_of(Trainer& trainer) {
  return trainer.optimizers().front().optimizer->param_groups()[0].options().get_lr();
}

}  // namespace

TEST_CASE("LR scheduler: interval step halves the LR after every optimizer step") {
  TempDir dir("sched-step");
  RecordingModule model(4, 0.8);
  model.scheduler_interval = Interval::Step;
  RegressionData data(5, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
  trainer.fit(model, data);
  CHECK(lr_of(trainer) == doctest::Approx(0.8 / 32));
}

TEST_CASE("LR scheduler: interval epoch steps once per epoch, honouring frequency") {
  TempDir dir("sched-epoch");
  {
    RecordingModule model(4, 0.8);
    model.scheduler_interval = Interval::Epoch;
    RegressionData data(5, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(3).logger(false));
    trainer.fit(model, data);
    CHECK(lr_of(trainer) == doctest::Approx(0.8 / 8));
  }
  {
    RecordingModule model(4, 0.8);
    model.scheduler_interval = Interval::Step;
    model.scheduler_frequency = 2;
    RegressionData data(5, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).accumulate_grad_batches(2).logger(false));
    trainer.fit(model, data);
    // 3 optimizer steps (2 + 2 + 1 batches); the scheduler steps at global_step 2 only.
    CHECK(trainer.state().global_step() == 3);
    CHECK(lr_of(trainer) == doctest::Approx(0.4));
  }
}

namespace {

/// A module whose gradient is huge and known: loss = 1000 * sum(w).
struct BigGradient : testing::RecordingModule {
  torch::Tensor training_step(const Batch&, int64_t) override { return linear->weight.sum() * 1000.0; }
  OptimizerConfig configure_optimizers() override {
    return {std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(1.0)), std::nullopt};
  }
};

}  // namespace

namespace {

/// Logs a scripted "val_score" per epoch and steps a ReduceLROnPlateauScheduler
/// (mode min, factor 0.5, patience 1) on `monitor`; records the LR at each epoch's end.
struct PlateauModule : testing::RecordingModule {
  explicit PlateauModule(std::string monitor = "val_score", bool strict = true)
      : RecordingModule(4, 0.8), monitor(std::move(monitor)), strict(strict) {}
  void validation_step(const Batch&, int64_t) override {
    log("val_score", torch::tensor(kScores[static_cast<size_t>(trainer()->state().current_epoch())]));
  }
  OptimizerConfig configure_optimizers() override {
    auto sgd = std::make_shared<torch::optim::SGD>(parameters(), torch::optim::SGDOptions(0.8));
    auto plateau = std::make_shared<torch::optim::ReduceLROnPlateauScheduler>(
        *sgd, torch::optim::ReduceLROnPlateauScheduler::min, 0.5, 1);
    return {sgd, LRSchedulerConfig{.plateau = plateau, .monitor = monitor, .strict = strict}};
  }
  void on_train_epoch_end() override {
    lrs.push_back(trainer()->optimizers().front().optimizer->param_groups()[0].options().get_lr());
  }
  static constexpr double kScores[] = {1.0, 2.0, 2.0, 0.5, 3.0, 3.0};
  std::string monitor;
  bool strict;
  std::vector<double> lrs;
};

}  // namespace

TEST_CASE("LR scheduler: ReduceLROnPlateau steps on its monitor after validation, and resumes exactly") {
  TempDir dir("sched-plateau");
  RegressionData data(2, 1);
  PlateauModule whole;
  {
    Trainer trainer(quiet_options(dir.path()).max_epochs(6).logger(false).enable_checkpointing(false));
    trainer.fit(whole, data);
  }
  // Scores 1, 2, 2, 0.5, 3, 3 with patience 1: halved after the 2nd bad epoch in a row (epochs 2 and 5).
  // The LR is read in on_train_epoch_end, before that epoch's scheduler step.
  CHECK(whole.lrs == std::vector<double>{0.8, 0.8, 0.8, 0.4, 0.4, 0.4});

  // Stopped after epoch 2 (one bad epoch counted) and resumed: the counters
  // come back, so epoch 3 halves the LR as in the uninterrupted run.
  const auto ckpt = dir / "plateau.ckpt";
  PlateauModule first;
  {
    Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false).enable_checkpointing(false));
    trainer.fit(first, data);
    trainer.save_checkpoint(ckpt);
  }
  PlateauModule resumed;
  Trainer trainer(quiet_options(dir.path()).max_epochs(6).logger(false).enable_checkpointing(false));
  trainer.fit(resumed, data, ckpt.string());
  CHECK(resumed.lrs == std::vector<double>{0.8, 0.4, 0.4, 0.4});
  CHECK(lr_of(trainer) == doctest::Approx(0.2));
}

TEST_CASE("LR scheduler: a plateau monitor that is not logged fails (strict) or warns (strict = false)") {
  TempDir dir("sched-plateau-missing");
  RegressionData data(2, 1);
  PlateauModule strict("val_los");
  Trainer strict_trainer(quiet_options(dir.path()).max_epochs(2).logger(false).enable_checkpointing(false));
  try {
    strict_trainer.fit(strict, data);
    FAIL("fit did not throw");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("ReduceLROnPlateau conditioned on metric 'val_los', which is not available; "
                                     "available metrics: ") != std::string::npos);
  }
  PlateauModule lenient("val_los", false);
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).logger(false).enable_checkpointing(false));
  trainer.fit(lenient, data);
  CHECK(lr_of(trainer) == doctest::Approx(0.8));

  struct NoMonitor : PlateauModule {
    NoMonitor() : PlateauModule("") {}
  } unmonitored;
  Trainer refused(quiet_options(dir.path()).max_epochs(1).logger(false).enable_checkpointing(false));
  CHECK_THROWS_WITH_AS(refused.fit(unmonitored, data),
                       doctest::Contains("a ReduceLROnPlateauScheduler needs the metric it watches"),
                       std::invalid_argument);
}

TEST_CASE("gradient clipping: norm bounds the total norm, value clamps elements") {
  TempDir dir("clip");
  RegressionData data(1, 0);
  {
    BigGradient model;
    const torch::Tensor before = model.linear->weight.detach().clone();
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).gradient_clip_val(0.5).logger(false));
    trainer.fit(model, data);
    // The weight gradient is 1000 per element (4 elements), bias 0: after clipping
    // to total norm 0.5 each element moves by 0.25 with lr 1.
    const torch::Tensor delta = before - model.linear->weight.detach();
    CHECK(delta.norm().item<double>() == doctest::Approx(0.5).epsilon(1e-4));
    CHECK(delta[0][0].item<double>() == doctest::Approx(0.25).epsilon(1e-4));
  }
  {
    BigGradient model;
    const torch::Tensor before = model.linear->weight.detach().clone();
    Trainer trainer(
        quiet_options(dir.path()).max_epochs(1).gradient_clip_val(0.1).gradient_clip_algorithm(ClipAlgorithm::Value).logger(false));
    trainer.fit(model, data);
    const torch::Tensor delta = before - model.linear->weight.detach();
    CHECK(torch::allclose(delta, torch::full_like(delta, 0.1)));
  }
  {
    BigGradient model;
    const torch::Tensor before = model.linear->weight.detach().clone();
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
    trainer.fit(model, data);
    const torch::Tensor delta = before - model.linear->weight.detach();
    CHECK(torch::allclose(delta, torch::full_like(delta, 1000.0)));
  }
}

}  // namespace optimization_test
