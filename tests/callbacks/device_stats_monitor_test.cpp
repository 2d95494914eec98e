#include "support/metrics_csv.hpp"
#include "support/tiny_modules.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>

namespace device_stats_monitor_test {

using namespace fulgur;
using fulgur::testing::csv_series;
using fulgur::testing::quiet_options;
using fulgur::testing::read_file;
using fulgur::testing::RegressionData;
using fulgur::testing::TempDir;


TEST_CASE("device stats monitor: the CPU's stats under Lightning's keys in metrics.csv, every log_every_n_steps") {
  TempDir dir("device-stats");
  testing::RecordingModule model;
  RegressionData data(6, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).log_every_n_steps(2),
                  {std::make_shared<DeviceStatsMonitor>()});
  trainer.fit(model, data);
  const std::string csv = read_file(trainer.log_dir() / "metrics.csv");
  INFO(csv);
  for (const std::string hook : {"on_train_batch_start", "on_train_batch_end"}) {
    for (const std::string key : {"cpu_percent", "cpu_vm_percent", "cpu_swap_percent"}) {
      const auto values = csv_series(csv, "DeviceStatsMonitor." + hook + "/" + key);
      INFO(hook << "/" << key);
      // Steps 1, 3, 5 of 6: the batches whose (step + 1) is a multiple of 2.
      REQUIRE(values.size() == 3);
      CHECK(values[0].first == 1);
      CHECK(values[2].first == 5);
      for (const auto& [step, value] : values) {
        CHECK(value >= 0.0);
        CHECK(value <= 100.0);
      }
    }
  }
  // Some memory is always in use.
  CHECK(csv_series(csv, "DeviceStatsMonitor.on_train_batch_start/cpu_vm_percent")[0].second > 0.0);
}

TEST_CASE("device stats monitor: cpu_stats false logs nothing on CPU; the CUDA half is empty without a GPU") {
  TempDir dir("device-stats-off");
  testing::RecordingModule model;
  RegressionData data(4, 0);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).log_every_n_steps(1),
                  {std::make_shared<DeviceStatsMonitor>(DeviceStatsMonitorOptions().cpu_stats(false))});
  trainer.fit(model, data);
  CHECK(read_file(trainer.log_dir() / "metrics.csv").find("DeviceStatsMonitor") == std::string::npos);

  // No CUDA driver on this machine: no allocator or NVML values, and no error.
  if (!torch::cuda::is_available()) {
    DeviceStatsMonitor monitor;
    CHECK(monitor.device_stats(torch::Device(torch::kCUDA, 0)).empty());
    DeviceStatsMonitor with_cpu(DeviceStatsMonitorOptions().cpu_stats(true));
    CHECK(with_cpu.device_stats(torch::Device(torch::kCUDA, 0)).count("cpu_percent") == 1);
  } else {
    DeviceStatsMonitor monitor;
    const auto stats = monitor.device_stats(torch::Device(torch::kCUDA, 0));
    CHECK(stats.count("allocated_bytes.all.current") == 1);
    CHECK(stats.count("num_ooms") == 1);
  }
}

TEST_CASE("device stats monitor: validation and test batches under their hooks' keys, not the sanity check") {
  TempDir dir("device-stats-eval");
  testing::RecordingModule model;
  RegressionData data(4, 4);
  Trainer trainer(quiet_options(dir.path()).max_epochs(1).log_every_n_steps(2).num_sanity_val_steps(2),
                  {std::make_shared<DeviceStatsMonitor>()});
  trainer.fit(model, data);
  trainer.test(model, data);
  const std::string csv = read_file(trainer.log_dir() / "metrics.csv");
  INFO(csv);
  for (const std::string hook : {"on_validation_batch_start", "on_validation_batch_end", "on_test_batch_start",
                                 "on_test_batch_end"}) {
    const auto values = csv_series(csv, "DeviceStatsMonitor." + hook + "/cpu_vm_percent");
    INFO(hook);
    // Batches 2 and 4 of 4 (the sanity check's 2 batches are not logged), at the global step after training.
    REQUIRE(values.size() == 2);
    for (const auto& [step, value] : values) {
      CHECK(step == 4);
      CHECK(value > 0.0);
      CHECK(value <= 100.0);
    }
  }
}

}  // namespace device_stats_monitor_test
