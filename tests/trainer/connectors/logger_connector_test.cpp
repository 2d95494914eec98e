// fulgur::LoggerConnector: one version_<N> claimed per run folder the open
// loggers share, and the metric maps and loggers fed from what the loops
// report (step values read lazily, epoch values winning over older steps').
#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/result_collection.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace logger_connector_test {

using namespace fulgur;
using fulgur::testing::MemoryLogger;
using fulgur::testing::TempDir;

namespace {

/// A Trainer whose one logger keeps its rows in memory, and a connector of it.
struct Connected {
  explicit Connected(const std::string& name) : dir(name) {}
  TempDir dir;
  std::shared_ptr<MemoryLogger> memory = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer{testing::quiet_options(dir.path().string()).enable_checkpointing(false), {}, {memory}};
  std::vector<std::shared_ptr<Callback>> no_callbacks;
  RunContext context{trainer.config(), trainer.strategy(), no_callbacks, trainer.loggers(), nullptr};
  LoggerConnector connector{context};
};

/// What one training step logged: (name, value, options) each.
std::vector<ResultCollection::StepValue> step_values(
    const std::vector<std::tuple<std::string, double, LogOptions>>& logged) {
  ResultCollection results(RunningStage::Train);
  results.set_batch_size(2);
  for (const auto& [name, value, options] : logged) results.log(name, torch::tensor(value), options);
  return results.step_values();
}

}  // namespace

TEST_CASE("logger_connector: loggers sharing a run folder get one new version, others their own") {
  TempDir dir("logger-connector-versions");
  std::filesystem::create_directories(dir / "shared" / "version_0");  // an earlier run's
  auto first = std::make_shared<CSVLogger>(dir.path(), "shared");
  auto second = std::make_shared<CSVLogger>(dir.path(), "shared");
  auto alone = std::make_shared<CSVLogger>(dir.path(), "alone");
  auto fixed = std::make_shared<CSVLogger>(dir.path(), "shared", 7);  // a version given is kept
  Trainer trainer(testing::quiet_options(dir.path().string()).enable_checkpointing(false), {},
                  {first, second, alone, fixed});
  std::vector<std::shared_ptr<Callback>> no_callbacks;
  RunContext context(trainer.config(), trainer.strategy(), no_callbacks, trainer.loggers(), nullptr);
  LoggerConnector connector(context);
  connector.claim_run_folder();
  CHECK(first->log_dir() == dir.path() / "shared" / "version_1");
  CHECK(second->log_dir() == dir.path() / "shared" / "version_1");
  CHECK(alone->log_dir() == dir.path() / "alone" / "version_0");
  CHECK(fixed->log_dir() == dir.path() / "shared" / "version_7");
  CHECK(std::filesystem::is_directory(dir / "shared" / "version_1"));
}

TEST_CASE("logger_connector: step values reach the metric maps when read and the loggers on logging steps") {
  Connected c("logger-connector-steps");
  c.connector.report_step(step_values({{"loss", 4.0, {.prog_bar = true}}, {"hidden", 1.0, {.logger = false}}}),
                          /*send_to_loggers=*/false);
  CHECK(c.memory->rows.empty());
  CHECK(c.connector.logged_metrics().empty());
  CHECK(c.connector.callback_metrics().at("loss") == doctest::Approx(4.0));
  CHECK(c.connector.progress_bar_metrics().at("loss") == doctest::Approx(4.0));
  CHECK(c.connector.progress_bar_metrics().count("hidden") == 0);

  c.connector.report_step(step_values({{"loss", 2.0, {}}, {"hidden", 3.0, {.logger = false}}}),
                          /*send_to_loggers=*/true);
  REQUIRE(c.memory->rows.size() == 1);
  // The logger gets the logged keys and the epoch, not what log() kept from loggers.
  const auto& row = c.memory->rows[0].second;
  CHECK(row.at("loss") == doctest::Approx(2.0));
  CHECK(row.count("epoch") == 1);
  CHECK(row.count("hidden") == 0);
  CHECK(c.connector.logged_metrics().at("loss") == doctest::Approx(2.0));
  CHECK(c.connector.callback_metrics().at("hidden") == doctest::Approx(3.0));
}

TEST_CASE("logger_connector: epoch values replace older step values in every map and go to the loggers") {
  Connected c("logger-connector-epoch");
  c.connector.report_step(step_values({{"val_loss", 9.0, {.prog_bar = true}}}), /*send_to_loggers=*/false);
  ResultCollection::Metrics epoch;
  epoch.add("val_loss", "val_loss", LogOptions{.prog_bar = true}, 0.5);
  c.connector.report_epoch(epoch);
  CHECK(c.connector.callback_metrics().at("val_loss") == doctest::Approx(0.5));
  CHECK(c.connector.progress_bar_metrics().at("val_loss") == doctest::Approx(0.5));
  CHECK(c.connector.logged_metrics().at("val_loss") == doctest::Approx(0.5));
  REQUIRE(c.memory->rows.size() == 1);
  CHECK(c.memory->rows[0].second.at("val_loss") == doctest::Approx(0.5));
}

}  // namespace logger_connector_test
