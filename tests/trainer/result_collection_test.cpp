#include <fulgur/strategies/single_device_strategy.hpp>
#include <fulgur/trainer/result_collection.hpp>

#include <doctest/doctest.h>

namespace result_collection_test {

using namespace fulgur;

namespace {

SingleDeviceStrategy cpu_strategy() {
  return SingleDeviceStrategy(Accelerator(AcceleratorKind::Cpu), PrecisionMode::Full32, torch::kCPU);
}

}  // namespace

TEST_CASE("ResultCollection: epoch mean is weighted by batch size") {
  auto strategy = cpu_strategy();
  ResultCollection results(RunningStage::Validate);
  results.set_batch_size(10);
  results.log("loss", torch::tensor(1.0), {});
  results.set_batch_size(30);
  results.log("loss", torch::tensor(3.0), {});
  const auto metrics = results.epoch_metrics(strategy);
  CHECK(metrics.logger.at("loss") == doctest::Approx((10 * 1.0 + 30 * 3.0) / 40));
  CHECK(metrics.callback.at("loss") == doctest::Approx(2.5));
  CHECK(metrics.prog_bar.empty());
}

TEST_CASE("ResultCollection: explicit batch_size overrides the batch's size") {
  auto strategy = cpu_strategy();
  ResultCollection results(RunningStage::Validate);
  results.set_batch_size(10);
  results.log("acc", torch::tensor(1.0), {.batch_size = 1});
  results.log("acc", torch::tensor(0.0), {.batch_size = 3});
  CHECK(results.epoch_metrics(strategy).logger.at("acc") == doctest::Approx(0.25));
}

TEST_CASE("ResultCollection: sum, max and min reductions") {
  auto strategy = cpu_strategy();
  ResultCollection results(RunningStage::Test);
  for (double v : {2.0, -1.0, 5.0}) {
    results.log("total", torch::tensor(v), {.reduce = ReduceOp::Sum});
    results.log("peak", torch::tensor(v), {.reduce = ReduceOp::Max});
    results.log("floor", torch::tensor(v), {.reduce = ReduceOp::Min});
  }
  const auto m = results.epoch_metrics(strategy).logger;
  CHECK(m.at("total") == doctest::Approx(6.0));
  CHECK(m.at("peak") == doctest::Approx(5.0));
  CHECK(m.at("floor") == doctest::Approx(-1.0));
}

TEST_CASE("ResultCollection: training logs per step by default, with _step/_epoch when both") {
  auto strategy = cpu_strategy();
  ResultCollection results(RunningStage::Train);
  results.set_batch_size(2);
  results.log("loss", torch::tensor(4.0), {.prog_bar = true});
  results.log("acc", torch::tensor(0.5), {.on_step = true, .on_epoch = true});
  // Step values stay tensors until read; reading them is one host copy.
  const int64_t reads_before = ResultCollection::host_reads();
  const auto values = results.step_values();
  CHECK(values.size() == 2);
  CHECK(ResultCollection::host_reads() == reads_before);
  auto step = ResultCollection::read(values);
  CHECK(ResultCollection::host_reads() == reads_before + 1);
  CHECK(step.logger.at("loss") == doctest::Approx(4.0));
  CHECK(step.prog_bar.at("loss") == doctest::Approx(4.0));
  CHECK(step.logger.at("acc_step") == doctest::Approx(0.5));
  CHECK(step.logger.count("acc") == 0);
  results.reset_step();
  CHECK(results.step_values().empty());
  results.log("acc", torch::tensor(1.0), {.on_step = true, .on_epoch = true});
  const auto epoch = results.epoch_metrics(strategy);
  CHECK(epoch.logger.count("loss") == 0);  // on_epoch=false by default in training
  CHECK(epoch.logger.at("acc_epoch") == doctest::Approx(0.75));
  CHECK(epoch.callback.at("acc") == doctest::Approx(0.75));
}

TEST_CASE("ResultCollection: logger=false keeps a value out of the loggers") {
  auto strategy = cpu_strategy();
  ResultCollection results(RunningStage::Validate);
  results.log("hidden", torch::tensor(1.0), {.prog_bar = true, .logger = false});
  const auto m = results.epoch_metrics(strategy);
  CHECK(m.logger.empty());
  CHECK(m.prog_bar.at("hidden") == doctest::Approx(1.0));
  CHECK(m.callback.at("hidden") == doctest::Approx(1.0));
}

TEST_CASE("ResultCollection: bad values are rejected with the metric's name") {
  ResultCollection results(RunningStage::Train);
  CHECK_THROWS_WITH_AS(results.log("vec", torch::ones({3}), {}),
                       "[LightningModule::log] 'vec' must be a scalar (one element), got shape 3",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(results.log("x", torch::tensor(1.0), {.on_step = false, .on_epoch = false}),
                       "[LightningModule::log] 'x' is logged with on_step=false and on_epoch=false",
                       std::invalid_argument);
  results.log("y", torch::tensor(1.0), {});
  CHECK_THROWS_WITH_AS(results.log("y", torch::tensor(1.0), {.reduce = ReduceOp::Max}),
                       "[LightningModule::log] 'y' was logged with different on_step/on_epoch/reduce options "
                       "within one epoch",
                       std::invalid_argument);
}

}  // namespace result_collection_test
