// Callbacks from the YAML config and the command line: the registry in
// process, then end to end through the example binary on the digits
// (trainer.callbacks, as LightningCLI reads it).
#include "support/metrics_csv.hpp"
#include "support/test_support.hpp"

#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/timer.hpp>
#include <fulgur/core/options.hpp>
#include <fulgur/trainer/cli/callback_registry.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

namespace callbacks_cli_test {

using fulgur::testing::csv_column;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kBinary = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10";
const std::string kFit = kBinary + " fit --config " + FULGUR_SOURCE_DIR + "/examples/cinic10/digits.yaml --data.root " +
                         FULGUR_SOURCE_DIR + "/data/digits-cinic --test_after_fit false ";

/// Options of CountingCallback, declared as a user program declares its own.
#define COUNTING_CALLBACK_OPTIONS(X)                                         \
  X(int64_t, every_n, 1, "count every n batches", fulgur::check::AtLeast{1}) \
  X(std::string, label, "", "name shown in messages", fulgur::check::NotEmpty{})

struct CountingCallbackOptions {
  FULGUR_OPTIONS(CountingCallbackOptions, COUNTING_CALLBACK_OPTIONS)
};

/// A callback class of a user program, with a check across options in its constructor.
class CountingCallback : public fulgur::Callback {
 public:
  using Options = CountingCallbackOptions;
  explicit CountingCallback(CountingCallbackOptions options) : options_(std::move(options)) {
    options_.validate();
    if (options_.label() == "reserved" && options_.every_n() > 1) {
      throw std::invalid_argument("[CountingCallback] label 'reserved' needs every_n 1");
    }
  }
  std::string state_key() const override { return "CountingCallback"; }
  const CountingCallbackOptions& options() const { return options_; }

 private:
  CountingCallbackOptions options_;
};

/// The ConfigError message of building `yaml` with `registry`, or "no error".
std::string config_error(const fulgur::cli::CallbackRegistry& registry, const std::string& yaml) {
  try {
    registry.create(YAML::Load(yaml), "trainer.callbacks");
  } catch (const fulgur::cli::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("callbacks cli: a program registers its own callback class with add<C> and builds it from YAML") {
  auto registry = fulgur::cli::CallbackRegistry::with_builtins();
  registry.add<CountingCallback>("CountingCallback");
  YAML::Node node = YAML::Load("[{class_path: my.project.CountingCallback, init_args: {every_n: 4, label: seen}}, "
                               "{class_path: CountingCallback, init_args: {label: other}}]");
  const auto callbacks = registry.create(node, "trainer.callbacks");
  REQUIRE(callbacks.size() == 2);
  const auto first = std::dynamic_pointer_cast<CountingCallback>(callbacks[0]);
  const auto second = std::dynamic_pointer_cast<CountingCallback>(callbacks[1]);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(first->options().every_n() == 4);
  CHECK(first->options().label() == "seen");
  CHECK(second->options().every_n() == 1);
  // The resolved options, defaults included, are written back for --print_config.
  CHECK(node[1]["init_args"]["every_n"].as<int64_t>() == 1);
  CHECK(node[1]["init_args"]["label"].as<std::string>() == "other");

  CHECK(config_error(registry, "{class_path: CountingCallback, init_args: {every_n: 0, label: x}}") ==
        "trainer.callbacks.init_args.every_n: must be >= 1, got 0");
  CHECK(config_error(registry, "[{class_path: CountingCallback, init_args: {every_n: two, label: x}}]") ==
        "trainer.callbacks[0].init_args.every_n: expected an integer, got 'two'");
  CHECK(config_error(registry, "{class_path: CountingCallback, init_args: {label: x, every: 2}}") ==
        "unknown key 'trainer.callbacks.init_args.every'; did you mean 'trainer.callbacks.init_args.every_n'?");
  CHECK(config_error(registry, "{class_path: CountingCallback, init_args: {label: reserved, every_n: 2}}") ==
        "trainer.callbacks.init_args: [CountingCallback] label 'reserved' needs every_n 1");
  CHECK(config_error(registry, "CountingCallbak") ==
        "trainer.callbacks.class_path: unknown callback class 'CountingCallbak' (known: CountingCallback, "
        "DeviceStatsMonitor, EMAWeightAveraging, EarlyStopping, GradientAccumulationScheduler, LearningRateMonitor, "
        "ModelCheckpoint, ModelSummary, OnExceptionCheckpoint, PredictionWriter, ProgressBar, StochasticWeightAveraging, "
        "ThroughputMonitor, Timer); did you mean 'CountingCallback'?");

  // A factory of its own reads the section itself; keys it leaves are unknown.
  registry.add("Fixed", [](fulgur::cli::ConfigSection&) {
    return std::make_shared<CountingCallback>(CountingCallbackOptions().label("fixed"));
  });
  CHECK(config_error(registry, "Fixed") == "no error");
  CHECK(config_error(registry, "{class_path: Fixed, init_args: {every_n: 2}}") ==
        "unknown key 'trainer.callbacks.init_args.every_n' for Fixed");
}

TEST_CASE("callbacks cli: Timer durations and accumulation schedules in their YAML shapes") {
  const auto registry = fulgur::cli::CallbackRegistry::with_builtins();
  YAML::Node node = YAML::Load(R"(
- {class_path: Timer, init_args: {duration: "01:02:03:04"}}
- {class_path: Timer, init_args: {duration: {hours: 1, minutes: 30}}}
- {class_path: Timer, init_args: {duration: 90.5}}
- Timer
- {class_path: GradientAccumulationScheduler, init_args: {scheduling: {0: 4, 2: 1}}}
)");
  const auto callbacks = registry.create(node, "trainer.callbacks");
  REQUIRE(callbacks.size() == 5);
  auto duration = [&](size_t i) {
    return std::dynamic_pointer_cast<fulgur::Timer>(callbacks[i])->options().duration();
  };
  CHECK(*duration(0) == 93784.0);
  CHECK(*duration(1) == 5400.0);
  CHECK(*duration(2) == 90.5);
  CHECK_FALSE(duration(3).has_value());
  CHECK(node[0]["init_args"]["duration"].as<std::string>() == "01:02:03:04");  // written back as given
  const auto scheduler = std::dynamic_pointer_cast<fulgur::GradientAccumulationScheduler>(callbacks[4]);
  REQUIRE(scheduler);
  CHECK(scheduler->factor_for(1) == 4);
  CHECK(scheduler->factor_for(2) == 1);
  CHECK(node[4]["init_args"]["scheduling"][2].as<int64_t>() == 1);

  CHECK(config_error(registry, "{class_path: Timer, init_args: {duration: {hours: 1, weeks: 2}}}") ==
        "trainer.callbacks.init_args.duration: expected seconds, \"DD:HH:MM:SS\" or {days, hours, minutes, seconds} "
        "or null, got '{hours: 1, weeks: 2}'");
  CHECK(config_error(registry, "{class_path: Timer, init_args: {duration: -5}}") ==
        "trainer.callbacks.init_args.duration: must be > 0, got -5");
  CHECK(config_error(registry, "{class_path: GradientAccumulationScheduler, init_args: {scheduling: {0: x}}}") ==
        "trainer.callbacks.init_args.scheduling: expected a mapping from an integer to an integer, got '{0: x}'");
  CHECK(config_error(registry, "GradientAccumulationScheduler") ==
        "trainer.callbacks.init_args.scheduling: must map at least one epoch to a factor, got {}");
  CHECK(config_error(registry, "{class_path: GradientAccumulationScheduler, init_args: {scheduling: {1: 0}}}") ==
        "trainer.callbacks.init_args.scheduling: must have factors >= 1, got {1: 0}");
}

TEST_CASE("callbacks cli: EarlyStopping, LearningRateMonitor and Timer from the YAML config") {
  TempDir dir("callbacks-yaml");
  std::ofstream(dir / "callbacks.yaml") << R"(trainer:
  max_epochs: 6
  callbacks:
    - class_path: EarlyStopping
      init_args:
        monitor: val_acc
        mode: max
        stopping_threshold: 0.5
        verbose: true
    - class_path: lightning.pytorch.callbacks.LearningRateMonitor
      init_args: {logging_interval: epoch, log_momentum: true}
    - class_path: Timer
      init_args: {duration: "00:01:00:00", interval: epoch}
)";
  const auto result = run_command(kFit + "--config " + (dir / "callbacks.yaml").string() +
                                      " --trainer.default_root_dir " + dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("EarlyStopping: Stopping threshold reached: val_acc = ") != std::string::npos);
  const std::string csv = read_file(dir.path() / "fulgur_logs" / "version_0" / "metrics.csv");
  // val_acc passes 0.5 after the first epoch already: one validation, then stop.
  const auto val_acc = csv_column(csv, "val_acc", "epoch");
  REQUIRE(val_acc.size() == 1);
  CHECK(val_acc[0].first == "0");
  CHECK(std::stod(val_acc[0].second) > 0.5);
  const auto lr = csv_column(csv, "lr-SGD");
  REQUIRE(lr.size() == 1);
  CHECK(std::stod(lr[0].second) == doctest::Approx(0.05));
  CHECK(std::stod(csv_column(csv, "lr-SGD-momentum")[0].second) == doctest::Approx(0.9));
  // hparams.yaml records the resolved callback options, defaults included.
  const std::string hparams = read_file(dir.path() / "fulgur_logs" / "version_0" / "hparams.yaml");
  CHECK(hparams.find("class_path: EarlyStopping") != std::string::npos);
  CHECK(hparams.find("patience: 3") != std::string::npos);
}

TEST_CASE("callbacks cli: from the command line, and GradientAccumulationScheduler changes the step count") {
  TempDir dir("callbacks-cli");
  const auto result = run_command(
      kFit + "--trainer.max_epochs 2 --trainer.log_every_n_steps 1 --trainer.default_root_dir " + dir.path().string() +
          " --trainer.callbacks '[{class_path: GradientAccumulationScheduler, init_args: {scheduling: {1: 4}}}, "
          "LearningRateMonitor]'",
      600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const std::string csv = read_file(dir.path() / "fulgur_logs" / "version_0" / "metrics.csv");
  // 40 batches: 40 steps in epoch 0, then 10 in epoch 1 (4 batches per step).
  const auto steps = csv_column(csv, "train_loss");
  REQUIRE_FALSE(steps.empty());
  CHECK(steps.back().first == "50");
  // The learning rate is logged per epoch (the example's StepLR steps by epoch).
  CHECK(csv_column(csv, "lr-SGD").size() == 2);
}

TEST_CASE("callbacks cli: ModelCheckpoint from the YAML config keeps the best file by a monitored metric") {
  TempDir dir("callbacks-checkpoint");
  std::ofstream(dir / "checkpoint.yaml") << R"(trainer:
  max_epochs: 3
  callbacks:
    - class_path: ModelCheckpoint
      init_args:
        monitor: val_acc
        mode: max
        save_top_k: 2
        save_last: true
        filename: "{epoch}-{val_acc:.3f}"
)";
  const auto result = run_command(kFit + "--config " + (dir / "checkpoint.yaml").string() +
                                      " --trainer.default_root_dir " + dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto folder = dir.path() / "fulgur_logs" / "version_0" / "checkpoints";
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  INFO(fmt::format("{}", fmt::join(names, " ")));
  // Two best of three epochs, plus last.ckpt; no temporary files left.
  REQUIRE(names.size() == 3);
  CHECK(names.back() == "last.ckpt");
  CHECK(names[0].rfind("epoch=", 0) == 0);
  CHECK(names[0].find("-val_acc=0.") != std::string::npos);
}

TEST_CASE("callbacks cli: monitors, the model summary and the simple profiler from the YAML config") {
  TempDir dir("callbacks-monitors");
  std::ofstream(dir / "monitors.yaml") << R"(trainer:
  max_epochs: 1
  log_every_n_steps: 10
  profiler: simple
  callbacks:
    - class_path: lightning.pytorch.callbacks.ThroughputMonitor
      init_args: {window_size: 5}
    - DeviceStatsMonitor
    - {class_path: ModelSummary, init_args: {max_depth: 2}}
    - OnExceptionCheckpoint
)";
  const auto result = run_command(kFit + "--config " + (dir / "monitors.yaml").string() +
                                      " --trainer.default_root_dir " + dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("Trainable params") != std::string::npos);
  CHECK(result.output.find("Total estimated model params size (MB)") != std::string::npos);
  CHECK(result.output.find("Profiler Report") != std::string::npos);
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  const std::string csv = read_file(run / "metrics.csv");
  const auto batches_per_sec = csv_column(csv, "train/device/batches_per_sec");
  const auto samples_per_sec = csv_column(csv, "train/device/samples_per_sec");
  REQUIRE(batches_per_sec.size() >= 3);  // steps 10, 20, 30 (40)
  REQUIRE(samples_per_sec.size() == batches_per_sec.size());
  CHECK(batches_per_sec[0].first == "10");
  CHECK(std::stod(batches_per_sec[0].second) > 0.0);
  // Full batches of 32 in the first window.
  CHECK(std::stod(samples_per_sec[0].second) == doctest::Approx(32.0 * std::stod(batches_per_sec[0].second)));
  CHECK(csv_column(csv, "DeviceStatsMonitor.on_train_batch_start/cpu_percent").size() == 4);
  CHECK(csv_column(csv, "DeviceStatsMonitor.on_train_batch_end/cpu_vm_percent").size() == 4);
  const std::string profile = read_file(run / "profile.txt");
  CHECK(profile.find("[_TrainingEpochLoop].train_dataloader_next") != std::string::npos);
  CHECK(profile.find("[Callback]ThroughputMonitor.on_train_batch_end") != std::string::npos);
  // The run ended normally: no stale on-exception checkpoint.
  CHECK_FALSE(std::filesystem::exists(run / "checkpoints" / "on_exception.ckpt"));
  CHECK(std::filesystem::exists(run / "checkpoints" / "last.ckpt"));
}

TEST_CASE("callbacks cli: --trainer.profiler pytorch writes a Chrome trace of the digits model's operators") {
  TempDir dir("callbacks-pytorch-profiler");
  const auto result = run_command(kFit + "--trainer.max_steps 6 --trainer.enable_model_summary false "
                                         "--trainer.profiler pytorch --trainer.default_root_dir " +
                                      dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  CHECK(result.output.find("Trainable params") == std::string::npos);
  const auto trace = dir.path() / "fulgur_logs" / "version_0" / "profile.pt.trace.json";
  REQUIRE(std::filesystem::exists(trace));
  const auto parsed = run_command("python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); "
                                  "n = {e.get(\"name\") for e in t[\"traceEvents\"]}; "
                                  "print(\"conv\" if \"aten::convolution\" in n else \"no conv\", "
                                  "\"addmm\" if \"aten::addmm\" in n else \"no addmm\")' " +
                                  trace.string());
  INFO(parsed.output);
  CHECK(parsed.exit_code == 0);
  CHECK(parsed.output == "conv addmm\n");
}

TEST_CASE("callbacks cli: unknown classes, keys and bad values exit 2 with one message, nothing written") {
  TempDir dir("callbacks-bad");
  const std::string fit = kFit + "--trainer.default_root_dir " + dir.path().string() + " --trainer.callbacks ";
  const auto unknown_class = run_command(fit + "'[{class_path: EarlyStoping}]'");
  CHECK(unknown_class.exit_code == 2);
  CHECK(unknown_class.output ==
        "error: trainer.callbacks[0].class_path: unknown callback class 'EarlyStoping' (known: DeviceStatsMonitor, "
        "EMAWeightAveraging, EarlyStopping, GradientAccumulationScheduler, LearningRateMonitor, ModelCheckpoint, "
        "ModelSummary, OnExceptionCheckpoint, PredictionWriter, ProgressBar, StochasticWeightAveraging, ThroughputMonitor, "
                                      "Timer); did you mean 'EarlyStopping'?\n");
  const auto unknown_key = run_command(fit + "'[{class_path: EarlyStopping, init_args: {monitor: x, patiense: 2}}]'");
  CHECK(unknown_key.exit_code == 2);
  CHECK(unknown_key.output == "error: unknown key 'trainer.callbacks[0].init_args.patiense'; did you mean "
                                    "'trainer.callbacks[0].init_args.patience'?\n");
  const auto missing = run_command(fit + "EarlyStopping");
  CHECK(missing.exit_code == 2);
  CHECK(missing.output == "error: trainer.callbacks.init_args.monitor: must be given (it has no default), got \"\"\n");
  const auto bad_mode = run_command(fit + "'{class_path: EarlyStopping, init_args: {monitor: x, mode: up}}'");
  CHECK(bad_mode.exit_code == 2);
  CHECK(bad_mode.output == "error: trainer.callbacks.init_args.mode: must be one of min, max, got 'up'\n");
  const auto bad_duration = run_command(fit + "'[Timer, {class_path: Timer, init_args: {duration: \"1:99\"}}]'");
  CHECK(bad_duration.exit_code == 2);
  CHECK(bad_duration.output.find("error: trainer.callbacks[1].init_args.duration: expected seconds") == 0);
  const auto bad_entry = run_command(fit + "'[{class_path: Timer, args: {}}]'");
  CHECK(bad_entry.exit_code == 2);
  CHECK(bad_entry.output == "error: trainer.callbacks[0]: unknown key 'args' (expected class_path, init_args)\n");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "fulgur_logs"));
}

TEST_CASE("callbacks cli: --print_config shows every callback option with its default") {
  const auto printed = run_command(kBinary + " fit --print_config --data.root x --trainer.callbacks "
                                             "'[{class_path: EarlyStopping, init_args: {monitor: val_loss}}]'");
  INFO(printed.output);
  CHECK(printed.exit_code == 0);
  CHECK(printed.output.find("class_path: EarlyStopping") != std::string::npos);
  CHECK(printed.output.find("min_delta: 0") != std::string::npos);
  CHECK(printed.output.find("check_finite: true") != std::string::npos);
}

}  // namespace callbacks_cli_test
