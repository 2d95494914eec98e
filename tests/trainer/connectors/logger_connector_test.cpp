// fulgur::LoggerConnector: one version_<N> claimed per run folder the open
// loggers share, and the metric maps and loggers fed from what the loops
// report (step values read lazily, epoch values winning over older steps').
#include "support/callback_test_modules.hpp"
#include "support/test_support.hpp"

#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/trainer/result_collection.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>

namespace logger_connector_test {

using namespace fulgur;
using fulgur::testing::MemoryLogger;
using fulgur::testing::TempDir;

TEST_CASE("logger_connector: loggers sharing a run folder get one new version, others their own") {
  TempDir dir("logger-connector-versions");
  std::filesystem::create_directories(dir / "shared" / "version_0");  // an earlier run's
  auto first = std::make_shared<CSVLogger>(dir.path(), "shared");
  auto second = std::make_shared<CSVLogger>(dir.path(), "shared");
  auto alone = std::make_shared<CSVLogger>(dir.path(), "alone");
  auto fixed = std::make_shared<CSVLogger>(dir.path(), "shared", 7);  // a version given is kept
  Trainer trainer(testing::quiet_options(dir.path().string()).enable_checkpointing(false), {},
                  {first, second, alone, fixed});
  LoggerConnector connector(trainer);
  connector.claim_run_folder();
  CHECK(first->log_dir() == dir.path() / "shared" / "version_1");
  CHECK(second->log_dir() == dir.path() / "shared" / "version_1");
  CHECK(alone->log_dir() == dir.path() / "alone" / "version_0");
  CHECK(fixed->log_dir() == dir.path() / "shared" / "version_7");
  CHECK(std::filesystem::is_directory(dir / "shared" / "version_1"));
}

TEST_CASE("logger_connector: step values reach the metric maps when read and the loggers on logging steps") {
  TempDir dir("logger-connector-steps");
  auto memory = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(testing::quiet_options(dir.path().string()).enable_checkpointing(false), {}, {memory});
  LoggerConnector connector(trainer);

  ResultCollection results(RunningStage::Train);
  results.set_batch_size(2);
  results.log("loss", torch::tensor(4.0), {.prog_bar = true});
  results.log("hidden", torch::tensor(1.0), {.logger = false});
  connector.report_step(results.step_values(), /*send_to_loggers=*/false);
  CHECK(memory->rows.empty());
  CHECK(connector.logged_metrics().empty());
  CHECK(connector.callback_metrics().at("loss") == doctest::Approx(4.0));
  CHECK(connector.progress_bar_metrics().at("loss") == doctest::Approx(4.0));
  CHECK(connector.progress_bar_metrics().count("hidden") == 0);

  ResultCollection next(RunningStage::Train);
  next.set_batch_size(2);
  next.log("loss", torch::tensor(2.0), {});
  next.log("hidden", torch::tensor(3.0), {.logger = false});
  connector.report_step(next.step_values(), /*send_to_loggers=*/true);
  REQUIRE(memory->rows.size() == 1);
  // The logger gets the logged keys and the epoch, not what log() kept from loggers.
  CHECK(memory->rows[0].second.at("loss") == doctest::Approx(2.0));
  CHECK(memory->rows[0].second.count("epoch") == 1);
  CHECK(memory->rows[0].second.count("hidden") == 0);
  CHECK(connector.logged_metrics().at("loss") == doctest::Approx(2.0));
  CHECK(connector.callback_metrics().at("hidden") == doctest::Approx(3.0));
}

TEST_CASE("logger_connector: epoch values replace older step values in every map and go to the loggers") {
  TempDir dir("logger-connector-epoch");
  auto memory = std::make_shared<MemoryLogger>(dir.path());
  Trainer trainer(testing::quiet_options(dir.path().string()).enable_checkpointing(false), {}, {memory});
  LoggerConnector connector(trainer);
  ResultCollection step(RunningStage::Train);
  step.set_batch_size(1);
  step.log("val_loss", torch::tensor(9.0), {.prog_bar = true});
  connector.report_step(step.step_values(), /*send_to_loggers=*/false);

  ResultCollection::Metrics epoch;
  epoch.add("val_loss", "val_loss", LogOptions{.prog_bar = true}, 0.5);
  connector.report_epoch(epoch);
  CHECK(connector.callback_metrics().at("val_loss") == doctest::Approx(0.5));
  CHECK(connector.progress_bar_metrics().at("val_loss") == doctest::Approx(0.5));
  CHECK(connector.logged_metrics().at("val_loss") == doctest::Approx(0.5));
  REQUIRE(memory->rows.size() == 1);
  CHECK(memory->rows[0].second.at("val_loss") == doctest::Approx(0.5));
}

}  // namespace logger_connector_test
