#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <doctest/doctest.h>

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
  model.scheduler_interval = SchedulerInterval::Step;
  RegressionData data(5, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false));
  trainer.fit(model, data);
  CHECK(lr_of(trainer) == doctest::Approx(0.8 / 32));
}

TEST_CASE("LR scheduler: interval epoch steps once per epoch, honouring frequency") {
  TempDir dir("sched-epoch");
  {
    RecordingModule model(4, 0.8);
    model.scheduler_interval = SchedulerInterval::Epoch;
    RegressionData data(5, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(3).logger(false));
    trainer.fit(model, data);
    CHECK(lr_of(trainer) == doctest::Approx(0.8 / 8));
  }
  {
    RecordingModule model(4, 0.8);
    model.scheduler_interval = SchedulerInterval::Step;
    model.scheduler_frequency = 2;
    RegressionData data(5, 0);
    Trainer trainer(quiet_options(dir.path()).max_epochs(1).accumulate_grad_batches(2).logger(false));
    trainer.fit(model, data);
    // 3 optimizer steps (2 + 2 + 1 batches); the scheduler steps at global_step 2 only.
    CHECK(trainer.global_step() == 3);
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
        quiet_options(dir.path()).max_epochs(1).gradient_clip_val(0.1).gradient_clip_algorithm("value").logger(false));
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
