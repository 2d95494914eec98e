#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace gradient_accumulation_scheduler_test {

using namespace fulgur;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

/// Counts optimizer steps per epoch.
class StepsPerEpoch : public Callback {
 public:
  std::string state_key() const override { return "StepsPerEpoch"; }
  void on_before_optimizer_step(Trainer& trainer, LightningModule&, torch::optim::Optimizer&) override {
    counts.resize(trainer.state().current_epoch() + 1);
    ++counts[trainer.state().current_epoch()];
  }
  std::vector<int64_t> counts;
};

}  // namespace

TEST_CASE("gradient accumulation scheduler: factors change by epoch") {
  GradientAccumulationScheduler scheduler(std::map<int64_t, int64_t>{{1, 4}, {3, 2}});
  CHECK(scheduler.factor_for(0) == 1);  // before the first key
  CHECK(scheduler.factor_for(1) == 4);
  CHECK(scheduler.factor_for(2) == 4);
  CHECK(scheduler.factor_for(3) == 2);
  CHECK(scheduler.factor_for(100) == 2);

  TempDir dir("accumulation-scheduler");
  RecordingModule model;
  RegressionData data(8, 0);
  auto steps = std::make_shared<StepsPerEpoch>();
  Trainer trainer(quiet_options(dir.path()).max_epochs(4).logger(false),
                  {std::make_shared<GradientAccumulationScheduler>(std::map<int64_t, int64_t>{{1, 4}, {3, 2}}), steps});
  trainer.fit(model, data);
  CHECK(steps->counts == std::vector<int64_t>{8, 2, 2, 4});
  CHECK(trainer.state().global_step() == 16);
}

TEST_CASE("gradient accumulation scheduler: same parameters as the fixed option for that factor") {
  auto train = [](int64_t fixed, std::shared_ptr<Callback> scheduler) {
    TempDir dir("accumulation-equivalence");
    RecordingModule model;
    RegressionData data(6, 0);
    std::vector<std::shared_ptr<Callback>> callbacks;
    if (scheduler) callbacks.push_back(scheduler);
    Trainer trainer(quiet_options(dir.path()).max_epochs(2).accumulate_grad_batches(fixed).logger(false), callbacks);
    torch::manual_seed(0);
    trainer.fit(model, data);
    return model.linear->weight.detach().clone();
  };
  torch::manual_seed(0);
  const torch::Tensor fixed = train(3, nullptr);
  torch::manual_seed(0);
  const torch::Tensor scheduled =
      train(1, std::make_shared<GradientAccumulationScheduler>(std::map<int64_t, int64_t>{{0, 3}}));
  torch::manual_seed(0);
  const torch::Tensor none = train(1, nullptr);
  CHECK(torch::equal(fixed, scheduled));
  CHECK_FALSE(torch::allclose(none, scheduled));
}

TEST_CASE("gradient accumulation scheduler: bad schedules and a fixed option are errors") {
  CHECK_THROWS_WITH_AS(GradientAccumulationScheduler(std::map<int64_t, int64_t>{}),
                       "[GradientAccumulationSchedulerOptions] scheduling must map at least one epoch to a factor, "
                       "got {}",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(GradientAccumulationScheduler(std::map<int64_t, int64_t>{{0, 4}, {2, 0}}),
                       "[GradientAccumulationSchedulerOptions] scheduling must have factors >= 1, got {0: 4, 2: 0}",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(GradientAccumulationScheduler(std::map<int64_t, int64_t>{{-1, 2}}),
                       "[GradientAccumulationSchedulerOptions] scheduling must have epochs >= 0, got {-1: 2}",
                       std::invalid_argument);
  TempDir dir("accumulation-conflict");
  RecordingModule model;
  RegressionData data(4, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).accumulate_grad_batches(2).logger(false),
                  {std::make_shared<GradientAccumulationScheduler>(std::map<int64_t, int64_t>{{0, 2}})});
  CHECK_THROWS_WITH_AS(trainer.fit(model, data), doctest::Contains("accumulate_grad_batches is 2"),
                       std::invalid_argument);
}

}  // namespace gradient_accumulation_scheduler_test
