// TensorBoardLogger, its event-file writer and logger selection, read back
// by the real tensorboard Python package (tests/support/read_tensorboard.py).
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/loggers/crc32c.hpp>
#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/loggers/event_file_writer.hpp>
#include <fulgur/loggers/tensor_board_logger.hpp>
#include <fulgur/loggers/wandb_logger.hpp>
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/logger_registry.hpp>

#include <doctest/doctest.h>

namespace tensor_board_logger_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kReader = std::string(FULGUR_SOURCE_DIR) + "/tests/support/read_tensorboard.py";

// What tensorboard finds in `folder`, as a YAML (JSON) tree.
YAML::Node read_with_tensorboard(const std::filesystem::path& folder) {
  const auto result = run_command(std::string(FULGUR_PYTHON) + " " + kReader + " " + folder.string() + " 2>&1", 120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  // The JSON is the last line; tensorboard may print warnings before it.
  const size_t start = result.output.rfind("\n{");
  return YAML::Load(start == std::string::npos ? result.output : result.output.substr(start + 1));
}

// [[step, value], ...] of one scalar tag.
std::vector<std::pair<int64_t, double>> scalar_series(const YAML::Node& read, const std::string& tag) {
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& point : read["scalars"][tag]) out.emplace_back(point[0].as<int64_t>(), point[1].as<double>());
  return out;
}

int64_t total_records(const YAML::Node& read) {
  int64_t total = 0;
  for (const auto& file : read["records"]) total += file.second.as<int64_t>();
  return total;
}

}  // namespace

TEST_CASE("crc32c: the published check value") {
  CHECK(crc32c("123456789") == 0xe3069283u);
  CHECK(crc32c("") == 0u);
}

TEST_CASE("TensorBoardLogger: scalars round-trip through tensorboard's EventAccumulator") {
  TempDir dir("tb-scalars");
  TensorBoardLogger logger(dir.path());
  CHECK(logger.log_dir() == dir.path() / "fulgur_logs" / "version_0");
  CHECK(std::filesystem::is_empty(logger.log_dir()));  // claimed by creating it; no file before the first record
  for (int64_t step = 1; step <= 50; ++step) {
    logger.log_metrics({{"epoch", static_cast<double>(step / 10)}, {"train_loss", 1.0 / static_cast<double>(step)}},
                       step);
  }
  logger.log_metrics({{"epoch", 4}, {"val_loss", 0.125}, {"val_acc", 0.9375}}, 50);
  logger.finalize("success");
  CHECK(logger.event_file().parent_path() == logger.log_dir());
  CHECK(logger.event_file().filename().string().rfind("events.out.tfevents.", 0) == 0);

  const YAML::Node read = read_with_tensorboard(logger.log_dir());
  CHECK(total_records(read) == 1 + 51);  // file_version + one event per log_metrics
  const auto train = scalar_series(read, "train_loss");
  REQUIRE(train.size() == 50);
  for (int64_t i = 0; i < 50; ++i) {
    CHECK(train[i].first == i + 1);
    CHECK(train[i].second == doctest::Approx(1.0 / static_cast<double>(i + 1)).epsilon(1e-6));
  }
  REQUIRE(scalar_series(read, "val_loss").size() == 1);
  CHECK(scalar_series(read, "val_loss")[0] == std::make_pair<int64_t, double>(50, 0.125));
  CHECK(scalar_series(read, "val_acc")[0] == std::make_pair<int64_t, double>(50, 0.9375));
  CHECK(scalar_series(read, "epoch").back() == std::make_pair<int64_t, double>(50, 4.0));

  TensorBoardLogger second(dir.path());
  CHECK(second.version() == 1);
}

TEST_CASE("TensorBoardLogger: the hparams plugin reads hyper-parameters, metrics and the end status") {
  TempDir dir("tb-hparams");
  YAML::Node h;
  h["trainer"]["max_epochs"] = 3;
  h["trainer"]["deterministic"] = true;
  h["model"]["lr"] = 0.05;
  h["model"]["arch"] = "cnn";
  h["data"]["sizes"].push_back(1);
  h["data"]["sizes"].push_back(2);
  h["seed_everything"] = 42;

  SUBCASE("success, metrics chosen from what was logged") {
    TensorBoardLogger logger(dir.path());
    logger.log_hyperparams(h);
    logger.log_metrics({{"epoch", 0}, {"train_loss", 0.5}}, 1);
    logger.log_metrics({{"epoch", 0}, {"val_loss", 0.25}, {"val_acc", 0.75}}, 1);
    logger.finalize("success");
    CHECK(YAML::LoadFile((logger.log_dir() / "hparams.yaml").string())["model"]["lr"].as<double>() == 0.05);

    const YAML::Node hp = read_with_tensorboard(logger.log_dir())["hparams"];
    const YAML::Node start = hp["session_start"]["hparams"];
    CHECK(start["trainer.max_epochs"]["kind"].as<std::string>() == "number_value");
    CHECK(start["trainer.max_epochs"]["value"].as<double>() == 3);
    CHECK(start["trainer.deterministic"]["kind"].as<std::string>() == "bool_value");
    CHECK(start["trainer.deterministic"]["value"].as<bool>());
    CHECK(start["model.lr"]["value"].as<double>() == doctest::Approx(0.05));
    CHECK(start["model.arch"]["kind"].as<std::string>() == "string_value");
    CHECK(start["model.arch"]["value"].as<std::string>() == "cnn");
    CHECK(start["data.sizes"]["value"].as<std::string>() == "[1, 2]");
    CHECK(start["seed_everything"]["value"].as<double>() == 42);
    CHECK(start.size() == 6);
    CHECK(hp["session_start"]["start_time_secs"].as<double>() > 1.7e9);

    // No metrics chosen: no experiment record, TensorBoard infers the columns.
    CHECK_FALSE(hp["experiment"].IsDefined());
    CHECK(hp["session_end"]["status"].as<std::string>() == "STATUS_SUCCESS");
    CHECK(hp["session_end"]["end_time_secs"].as<double>() >= hp["session_start"]["start_time_secs"].as<double>());

    // What the HPARAMS tab shows, from the hparams plugin's backend.
    const YAML::Node tab = read_with_tensorboard(logger.log_dir())["tab"];
    CHECK(tab["hparams"].as<std::vector<std::string>>() ==
          std::vector<std::string>{"data.sizes", "model.arch", "model.lr", "seed_everything", "trainer.deterministic",
                                   "trainer.max_epochs"});
    CHECK(tab["metrics"].as<std::vector<std::string>>() ==
          std::vector<std::string>{"epoch", "train_loss", "val_acc", "val_loss"});
    REQUIRE(tab["groups"].size() == 1);
    CHECK(tab["groups"][0]["statuses"].as<std::vector<std::string>>() == std::vector<std::string>{"STATUS_SUCCESS"});
    CHECK(tab["groups"][0]["metrics"]["val_acc"].as<double>() == 0.75);
    CHECK(tab["groups"][0]["metrics"]["train_loss"].as<double>() == 0.5);
  }
  SUBCASE("failed, with the metrics the user chose") {
    TensorBoardLogger logger(dir.path());
    logger.hparams_metrics({"val_acc"});
    logger.log_hyperparams(h);
    logger.log_metrics({{"train_loss", 0.5}}, 1);
    logger.finalize("failed");
    const YAML::Node read = read_with_tensorboard(logger.log_dir());
    const YAML::Node experiment = read["hparams"]["experiment"];
    CHECK(experiment["metrics"].as<std::vector<std::string>>() == std::vector<std::string>{"val_acc"});
    CHECK(experiment["hparams"]["model.lr"].as<std::string>() == "DATA_TYPE_FLOAT64");
    CHECK(experiment["hparams"]["trainer.deterministic"].as<std::string>() == "DATA_TYPE_BOOL");
    CHECK(experiment["hparams"]["model.arch"].as<std::string>() == "DATA_TYPE_STRING");
    CHECK(read["hparams"]["session_end"]["status"].as<std::string>() == "STATUS_FAILURE");
    CHECK(read["tab"]["metrics"].as<std::vector<std::string>>() == std::vector<std::string>{"val_acc"});
    CHECK(read["tab"]["groups"][0]["statuses"].as<std::vector<std::string>>() ==
          std::vector<std::string>{"STATUS_FAILURE"});
  }
}

TEST_CASE("TensorBoardLogger: weight histograms are readable") {
  TempDir dir("tb-histograms");
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(6, 5), torch::nn::ReLU(), torch::nn::Linear(5, 2));
  TensorBoardLogger logger(dir.path());
  logger.log_histograms(*net, 7);
  logger.log_histogram("constant", torch::full({4}, 2.5), 7);
  logger.log_histogram("with_nan", torch::tensor({1.0, std::nan(""), 3.0}), 8);
  logger.finalize("success");

  const YAML::Node histograms = read_with_tensorboard(logger.log_dir())["histograms"];
  for (const auto& item : net->named_parameters()) {
    INFO(item.key());
    const YAML::Node h = histograms[item.key()][0];
    REQUIRE(h.IsDefined());
    const torch::Tensor w = item.value().detach().to(torch::kDouble);
    CHECK(h["step"].as<int64_t>() == 7);
    CHECK(h["num"].as<double>() == static_cast<double>(w.numel()));
    CHECK(h["min"].as<double>() == doctest::Approx(w.min().item<double>()));
    CHECK(h["max"].as<double>() == doctest::Approx(w.max().item<double>()));
    CHECK(h["sum"].as<double>() == doctest::Approx(w.sum().item<double>()));
    const auto counts = h["bucket"].as<std::vector<double>>();
    CHECK(std::accumulate(counts.begin(), counts.end(), 0.0) == static_cast<double>(w.numel()));
    CHECK(h["bucket_limit"].as<std::vector<double>>().back() == doctest::Approx(w.max().item<double>()));
  }
  CHECK(histograms["constant"][0]["bucket"].as<std::vector<double>>() == std::vector<double>{4});
  CHECK(histograms["with_nan"][0]["num"].as<double>() == 2);
  CHECK(histograms["with_nan"][0]["max"].as<double>() == 3);
}

TEST_CASE("TensorBoardLogger: save() makes everything logged so far readable while the run goes on") {
  TempDir dir("tb-save");
  TensorBoardLogger logger(dir.path());
  logger.flush_secs(3600);  // only save() flushes
  for (int64_t step = 0; step < 10; ++step) logger.log_metrics({{"train_loss", static_cast<double>(step)}}, step);
  logger.save();
  CHECK(scalar_series(read_with_tensorboard(logger.log_dir()), "train_loss").size() == 10);
  logger.log_metrics({{"train_loss", 10}}, 10);
  logger.save();
  CHECK(scalar_series(read_with_tensorboard(logger.log_dir()), "train_loss").size() == 11);
  logger.finalize("success");

  // A record after finalize starts a second event file in the same folder.
  logger.log_metrics({{"train_loss", 11}}, 11);
  logger.finalize("success");
  const YAML::Node read = read_with_tensorboard(logger.log_dir());
  CHECK(read["records"].size() == 2);
  CHECK(scalar_series(read, "train_loss").size() == 12);
}

TEST_CASE("TensorBoardLogger: bad options are refused") {
  TempDir dir("tb-options");
  CHECK_THROWS_WITH_AS(TensorBoardLogger(dir.path(), "x", -1), doctest::Contains("version must be >= 0, got -1"),
                       std::invalid_argument);
  TensorBoardLogger logger(dir.path());
  CHECK_THROWS_WITH_AS(logger.max_queue(0), doctest::Contains("[TensorBoardLogger::max_queue]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(logger.flush_secs(0), doctest::Contains("[TensorBoardLogger::flush_secs] must be > 0"),
                       std::invalid_argument);
}

TEST_CASE("EventFileWriter: a write error names the file") {
  // /dev/full accepts the open and fails every write with ENOSPC.
  EventFileWriter writer("/dev/full", 4, 3600);
  writer.write(std::string(100000, 'x'));
  CHECK_THROWS_WITH_AS(writer.flush(), doctest::Contains("cannot write /dev/full"), std::runtime_error);
  CHECK_THROWS_WITH_AS(writer.write("y"), doctest::Contains("cannot write /dev/full"), std::runtime_error);
  CHECK_THROWS_WITH_AS(writer.close(), doctest::Contains("cannot write /dev/full"), std::runtime_error);
  CHECK_THROWS_WITH_AS(EventFileWriter("/nonexistent-dir/events", 4, 1), doctest::Contains("/nonexistent-dir/events"),
                       std::runtime_error);
}

TEST_CASE("EventFileWriter: a bounded queue loses nothing under many small writes") {
  TempDir dir("tb-queue");
  TensorBoardLogger logger(dir.path());
  logger.max_queue(2);
  for (int64_t step = 0; step < 2000; ++step) logger.log_metrics({{"loss", static_cast<double>(step)}}, step);
  logger.finalize("success");
  const auto series = scalar_series(read_with_tensorboard(logger.log_dir()), "loss");
  REQUIRE(series.size() == 2000);
  CHECK(series[1999] == std::make_pair<int64_t, double>(1999, 1999.0));
}

TEST_CASE("trainer.logger: names, lists, booleans and entries share one run folder") {
  TempDir dir("tb-registry");
  std::filesystem::create_directories(dir.path() / "fulgur_logs" / "version_3");
  const auto registry = cli::LoggerRegistry::with_builtins();
  auto create = [&](const std::string& yaml) {
    return registry.create(YAML::Load(yaml), "trainer.logger", dir.path());
  };
  // The class of each logger built, in order.
  auto kinds = [&](const std::string& yaml) {
    std::vector<std::string> out;
    for (const auto& logger : create(yaml)) {
      if (dynamic_cast<CSVLogger*>(logger.get()) != nullptr) out.push_back("csv");
      if (dynamic_cast<TensorBoardLogger*>(logger.get()) != nullptr) out.push_back("tensorboard");
      if (dynamic_cast<WandbLogger*>(logger.get()) != nullptr) out.push_back("wandb");
    }
    return out;
  };
  using Names = std::vector<std::string>;
  CHECK(kinds("true") == Names{"csv"});
  CHECK(kinds("false").empty());
  CHECK(kinds("null").empty());
  CHECK(kinds("[]").empty());
  CHECK(kinds("tensorboard") == Names{"tensorboard"});
  CHECK(kinds("csv,tensorboard") == Names{"csv", "tensorboard"});
  CHECK(kinds("[tensorboard, csv]") == Names{"tensorboard", "csv"});
  CHECK(kinds("[lightning.pytorch.loggers.CSVLogger, {class_path: WandbLogger, init_args: {project: p}}]") ==
        Names{"csv", "wandb"});
  const auto loggers = create("csv, tensorboard");
  // One open version for both: the Trainer claims it when the run starts.
  CHECK(loggers[0]->open_versions_dir() == dir.path() / "fulgur_logs");
  CHECK(loggers[1]->open_versions_dir() == loggers[0]->open_versions_dir());
  CHECK(std::filesystem::exists(dir.path() / "fulgur_logs" / "version_4") == false);  // nothing claimed yet

  CHECK_THROWS_WITH_AS(create("csv,wandbb"),
                       "trainer.logger[1].class_path: unknown logger class 'wandbb' (known: CSVLogger, "
                       "TensorBoardLogger, WandbLogger, csv, tensorboard, wandb); did you mean 'wandb'?",
                       cli::ConfigError);
  CHECK_THROWS_WITH_AS(create("[csv, CSVLogger]"),
                       "trainer.logger[1]: a second logger of the class of trainer.logger[0] (loggers share one run "
                       "folder)",
                       cli::ConfigError);
  CHECK_THROWS_WITH_AS(create("{a: 1}"), "trainer.logger: unknown key 'a' (expected class_path, init_args)",
                       cli::ConfigError);
  CHECK_THROWS_WITH_AS(create("{class_path: csv, init_args: {flush: 1}}"),
                       "unknown key 'trainer.logger.init_args.flush' for csv", cli::ConfigError);
  CHECK_THROWS_WITH_AS(create("{class_path: wandb, init_args: {python: ''}}"),
                       doctest::Contains("trainer.logger.init_args.python"), cli::ConfigError);
}

TEST_CASE("TensorBoardLogger in a Trainer: steps match metrics.csv; a failing run is recorded as failed") {
  TempDir dir("tb-trainer");
  testing::RecordingModule model;
  testing::RegressionData data(4, 2);
  {
    Trainer trainer(testing::quiet_options(dir.path()).max_epochs(2).log_every_n_steps(2).num_sanity_val_steps(0),
                    {}, cli::LoggerRegistry::with_builtins().create(YAML::Load("[csv, tensorboard]"), "trainer.logger",
                                                                     dir.path()));
    trainer.fit(model, data);
  }
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  const YAML::Node read = read_with_tensorboard(run);
  const auto train = scalar_series(read, "train_loss");
  REQUIRE(train.size() == 4);
  CHECK(train[0].first == 2);
  CHECK(train[3].first == 8);
  const auto val = scalar_series(read, "val_loss");
  REQUIRE(val.size() == 2);
  CHECK(val[1].first == 8);
  // The same numbers as the CSV logger's last val_loss row.
  const std::string csv = read_file(run / "metrics.csv");
  const size_t last_row = csv.rfind("1,8,,");
  REQUIRE(last_row != std::string::npos);
  CHECK(std::stod(csv.substr(last_row + 5)) == doctest::Approx(val[1].second).epsilon(1e-6));
  CHECK(read["hparams"]["session_end"]["status"].as<std::string>() == "STATUS_SUCCESS");

  struct Exploding : testing::RecordingModule {
    torch::Tensor training_step(const Batch& batch, int64_t index) override {
      if (index == 1) throw std::runtime_error("boom");
      return RecordingModule::training_step(batch, index);
    }
  } exploding;
  Trainer failing(testing::quiet_options(dir.path()).max_epochs(1).log_every_n_steps(1).num_sanity_val_steps(0), {},
                  {std::make_shared<TensorBoardLogger>(dir.path())});
  CHECK_THROWS_WITH(failing.fit(exploding, data), "boom");
  const YAML::Node failed = read_with_tensorboard(dir.path() / "fulgur_logs" / "version_1");
  CHECK(failed["hparams"]["session_end"]["status"].as<std::string>() == "STATUS_FAILURE");
  CHECK(scalar_series(failed, "train_loss").size() == 1);
}

TEST_CASE("cinic10 fit --trainer.logger csv,tensorboard: tensorboard reads the run") {
  const std::string digits = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(digits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("tb-example");
  const auto result = run_command(std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 fit --config " + FULGUR_SOURCE_DIR +
                                      "/examples/cinic10/digits.yaml --trainer.max_epochs 2 --data.root " + digits +
                                      " --trainer.logger csv,tensorboard --trainer.enable_progress_bar false" +
                                      " --trainer.default_root_dir " + dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  REQUIRE(std::filesystem::exists(run / "metrics.csv"));
  const YAML::Node read = read_with_tensorboard(run);
  for (const std::string tag : {"train_loss", "val_loss", "val_acc", "test_loss", "test_acc", "epoch"}) {
    INFO(tag);
    CHECK(read["scalars"][tag].size() >= 1);
  }
  // digits.yaml: 1257 images in batches of 32 = 40 steps per epoch, logged every 10.
  const auto train = scalar_series(read, "train_loss");
  REQUIRE(train.size() == 8);
  for (size_t i = 0; i < train.size(); ++i) CHECK(train[i].first == static_cast<int64_t>(10 * (i + 1)));
  const auto val_acc = scalar_series(read, "val_acc");
  REQUIRE(val_acc.size() == 2);
  CHECK(val_acc[0].first == 40);
  CHECK(val_acc[1].first == 80);
  CHECK(val_acc[1].second > 0.8);
  // fit and the test after it each open an event file; both sessions start with the config.
  CHECK(read["records"].size() == 2);
  const YAML::Node hp = read["hparams"];
  CHECK(hp["session_start"]["hparams"]["trainer.max_epochs"]["value"].as<double>() == 2);
  CHECK(hp["session_start"]["hparams"]["model.arch"]["value"].as<std::string>() == "cnn");
  CHECK(hp["session_end"]["status"].as<std::string>() == "STATUS_SUCCESS");
  // The HPARAMS tab: one run, fit's status, the test metrics too.
  const auto metrics = read["tab"]["metrics"].as<std::vector<std::string>>();
  for (const std::string tag : {"train_loss", "val_acc", "test_acc"}) {
    CHECK(std::find(metrics.begin(), metrics.end(), tag) != metrics.end());
  }
  REQUIRE(read["tab"]["groups"].size() == 1);
  CHECK(read["tab"]["groups"][0]["metrics"]["val_acc"].as<double>() == doctest::Approx(val_acc[1].second));
}

}  // namespace tensor_board_logger_test
