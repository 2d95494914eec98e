#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace learning_rate_monitor_test {

using namespace fulgur;
using fulgur::testing::MemoryLogger;
using fulgur::testing::quiet_options;
using fulgur::testing::RecordingModule;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;

namespace {

/// Two parameter groups (weight and bias) with their own rate and momentum.
class TwoGroupModule : public RecordingModule {
 public:
  OptimizerConfig configure_optimizers() override {
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{linear->weight},
                        std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.1).momentum(0.9)));
    groups.emplace_back(std::vector<torch::Tensor>{linear->bias},
                        std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.01).momentum(0.5)));
    return {std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(0.1)), std::nullopt};
  }
};

}  // namespace

TEST_CASE("learning rate monitor: step interval follows a step scheduler") {
  TempDir dir("lr-monitor-step");
  RecordingModule model(4, 0.8);
  model.scheduler_interval = Interval::Step;  // halves the rate after every step
  RegressionData data(3, 0);
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).log_every_n_steps(2),
                  {std::make_shared<LearningRateMonitor>()}, {logger});
  trainer.fit(model, data);
  // The rate each logged step uses: 0.8 * 0.5^step, every second step.
  const auto series = logger->series("lr-SGD");
  REQUIRE(series.size() == 3);
  for (size_t i = 0; i < series.size(); ++i) {
    CHECK(series[i].first == static_cast<int64_t>(2 * i));
    CHECK(series[i].second == doctest::Approx(0.8 * std::pow(0.5, 2 * i)));
  }
}

TEST_CASE("learning rate monitor: epoch interval, parameter groups and momentum") {
  TempDir dir("lr-monitor-groups");
  TwoGroupModule model;
  RegressionData data(3, 0);
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(2),
                  {std::make_shared<LearningRateMonitor>(
                      LearningRateMonitorOptions().logging_interval(Interval::Epoch).log_momentum(true).log_weight_decay(true))},
                  {logger});
  trainer.fit(model, data);
  const auto pg1 = logger->series("lr-SGD/pg1");
  REQUIRE(pg1.size() == 2);
  CHECK(pg1[0].first == 0);
  CHECK(pg1[1].first == 3);  // start of epoch 1, after 3 steps
  CHECK(pg1[0].second == doctest::Approx(0.1));
  CHECK(logger->series("lr-SGD/pg2")[0].second == doctest::Approx(0.01));
  CHECK(logger->series("lr-SGD/pg1-momentum")[0].second == doctest::Approx(0.9));
  CHECK(logger->series("lr-SGD/pg2-momentum")[0].second == doctest::Approx(0.5));
  CHECK(logger->series("lr-SGD/pg2-weight_decay")[0].second == 0.0);
  CHECK(logger->series("lr-SGD").empty());
}

TEST_CASE("learning rate monitor: Adam's name and beta1 as momentum; no logger is an error") {
  torch::nn::Linear layer(2, 1);
  torch::optim::Adam adam(layer->parameters(), torch::optim::AdamOptions(1e-3).betas({0.8, 0.99}));
  CHECK(LearningRateMonitor::optimizer_name(adam) == "Adam");
  torch::optim::AdamW adamw(layer->parameters());
  CHECK(LearningRateMonitor::optimizer_name(adamw) == "AdamW");

  TempDir dir("lr-monitor-nologger");
  RecordingModule model;
  RegressionData data(2, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).logger(false), {std::make_shared<LearningRateMonitor>()});
  CHECK_THROWS_WITH_AS(trainer.fit(model, data), "[LearningRateMonitor] cannot log learning rates: the Trainer has no logger",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(parse_choice<Interval>("batch"), "must be one of step, epoch, got 'batch'",
                       std::invalid_argument);
}

}  // namespace learning_rate_monitor_test
