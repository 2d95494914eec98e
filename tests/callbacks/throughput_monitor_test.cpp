#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

namespace throughput_monitor_test {

using namespace fulgur;
using fulgur::testing::MemoryLogger;
using fulgur::testing::quiet_options;
using fulgur::testing::RegressionData;
using fulgur::testing::SlowModule;
using fulgur::testing::TempDir;

namespace {

/// SlowModule that states its FLOPs per batch.
class FlopsModule : public SlowModule {
 public:
  FlopsModule() : SlowModule(20) {}
  std::optional<double> flops_per_batch() const override { return 2.0e6; }
};

/// Records when every training batch ended, as the monitor sees it.
class BatchEndClock : public Callback {
 public:
  std::string state_key() const override { return "BatchEndClock"; }
  void on_train_batch_end(Trainer&, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override {
    ends.push_back(std::chrono::steady_clock::now());
  }
  std::vector<std::chrono::steady_clock::time_point> ends;
};

}  // namespace

TEST_CASE("throughput monitor: rates over the window match the measured step times; flops and mfu") {
  TempDir dir("throughput");
  FlopsModule model;  // every step sleeps 20 ms
  RegressionData data(12, 0, /*batch_size=*/8);
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  auto clock = std::make_shared<BatchEndClock>();
  const int64_t window = 4;
  Trainer trainer(
      quiet_options(dir.path()).max_epochs(1).log_every_n_steps(2),
      {std::make_shared<ThroughputMonitor>(ThroughputMonitorOptions().window_size(window).available_flops(1e9)), clock},
      {logger});
  trainer.fit(model, data);
  REQUIRE(clock->ends.size() == 12);

  // Logged every 2nd step; rates once the window holds 4 batches (step 4 on).
  const auto batches = logger->series("train/batches");
  REQUIRE(batches.size() == 6);
  CHECK(batches[0] == std::pair<int64_t, double>{2, 2.0});
  CHECK(logger->series("train/samples")[0].second == 16.0);
  const auto rate = logger->series("train/device/batches_per_sec");
  REQUIRE(rate.size() == 5);
  const auto samples = logger->series("train/device/samples_per_sec");
  const auto flops = logger->series("train/device/flops_per_sec");
  const auto mfu = logger->series("train/device/mfu");
  REQUIRE(samples.size() == 5);
  REQUIRE(flops.size() == 5);
  REQUIRE(mfu.size() == 5);
  for (size_t i = 0; i < rate.size(); ++i) {
    const int64_t step = rate[i].first;  // batches 1..step done; the window is the last 4 of them
    CHECK(step == static_cast<int64_t>(4 + 2 * i));
    const double measured =
        std::chrono::duration<double>(clock->ends[step - 1] - clock->ends[step - window]).count();
    const double expected = static_cast<double>(window - 1) / measured;
    INFO("step " << step << ": logged " << rate[i].second << " batches/s, measured " << expected);
    CHECK(rate[i].second == doctest::Approx(expected).epsilon(0.05));
    CHECK(rate[i].second > 0.0);
    CHECK(rate[i].second <= 50.0);  // no step is shorter than its 20 ms sleep
    CHECK(samples[i].second == doctest::Approx(8.0 * rate[i].second));
    CHECK(flops[i].second == doctest::Approx(2.0e6 * rate[i].second));
    CHECK(mfu[i].second == doctest::Approx(flops[i].second / 1e9));
  }
  // One process: no global keys.
  CHECK(logger->series("train/batches_per_sec").empty());
  CHECK(logger->series("train/samples_per_sec").empty());
}

TEST_CASE("throughput monitor: no flops without the module's count; known GPU peaks") {
  TempDir dir("throughput-noflops");
  SlowModule model(1);
  RegressionData data(6, 0);
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).log_every_n_steps(1),
                  {std::make_shared<ThroughputMonitor>(ThroughputMonitorOptions().window_size(2))}, {logger});
  trainer.fit(model, data);
  CHECK(logger->series("train/device/samples_per_sec").size() == 5);
  CHECK(logger->series("train/device/flops_per_sec").empty());
  CHECK(logger->series("train/device/mfu").empty());

  CHECK(*ThroughputMonitor::peak_flops("NVIDIA H100 80GB HBM3", fulgur::PrecisionMode::BF16Mixed) == 989.4e12);
  CHECK(*ThroughputMonitor::peak_flops("NVIDIA H100 PCIe", fulgur::PrecisionMode::BF16Mixed) == 756e12);
  CHECK(*ThroughputMonitor::peak_flops("NVIDIA A100-SXM4-80GB", fulgur::PrecisionMode::Full32) == 19.5e12);
  CHECK_FALSE(ThroughputMonitor::peak_flops("Some CPU", fulgur::PrecisionMode::Full32).has_value());
  CHECK_THROWS_WITH_AS(ThroughputMonitor(ThroughputMonitorOptions().window_size(1)),
                       "[ThroughputMonitorOptions] window_size must be >= 2, got 1", std::invalid_argument);
}

namespace {

/// SlowModule whose validation batches take 250 ms each.
class SlowValidationModule : public SlowModule {
 public:
  SlowValidationModule() : SlowModule(5) {}
  void validation_step(const Batch& batch, int64_t idx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    SlowModule::validation_step(batch, idx);
  }
};

}  // namespace

TEST_CASE("throughput monitor: validate and test stages; validation time stays out of the training rates") {
  TempDir dir("throughput-stages");
  SlowValidationModule model;
  RegressionData data(6, 4, /*batch_size=*/8);
  auto logger = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(quiet_options(dir.path()).max_epochs(2).log_every_n_steps(2).num_sanity_val_steps(2),
                  {std::make_shared<ThroughputMonitor>(ThroughputMonitorOptions().window_size(2))}, {logger});
  trainer.fit(model, data);

  // Two validation runs of 4 batches, logged every 2nd batch at the running batch count;
  // the sanity check's 2 batches are not counted. Totals restart with every run.
  using Series = std::vector<std::pair<int64_t, double>>;
  CHECK(logger->series("validate/batches") == Series{{2, 2.0}, {4, 4.0}, {6, 2.0}, {8, 4.0}});
  CHECK(logger->series("validate/samples") == Series{{2, 16.0}, {4, 32.0}, {6, 16.0}, {8, 32.0}});
  const auto validate_rate = logger->series("validate/device/samples_per_sec");
  REQUIRE(validate_rate.size() == 4);
  for (const auto& [step, rate] : validate_rate) {
    CHECK(rate > 0.0);
    CHECK(rate <= 8.0 / 0.25);  // no validation batch is shorter than its 250 ms sleep
  }
  // The first epoch's validation (1 s of sleeps) lies between training steps 6 and 8,
  // but not in the training clock.
  const auto train_time = logger->series("train/time");
  REQUIRE(train_time.size() == 6);
  REQUIRE(train_time[2].first == 6);
  REQUIRE(train_time[3].first == 8);
  CHECK(train_time[3].second - train_time[2].second < 1.0);

  trainer.test(model, data);
  CHECK(logger->series("test/batches") == Series{{2, 2.0}, {4, 4.0}});
  const auto test_rate = logger->series("test/device/batches_per_sec");
  REQUIRE(test_rate.size() == 2);
  CHECK(test_rate[0].second > 0.0);
}

}  // namespace throughput_monitor_test
