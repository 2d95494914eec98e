#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/loggers/csv_logger.hpp>

#include <doctest/doctest.h>

#include <sstream>

namespace csv_logger_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("CSVLogger: versions count up and the header grows with new metrics") {
  TempDir dir("csv");
  CSVLogger first(dir.path());
  CHECK(first.log_dir() == dir.path() / "fulgur_logs" / "version_0");
  first.log_metrics({{"epoch", 0}, {"loss", 0.5}}, 1);
  first.save();
  first.log_metrics({{"epoch", 0}, {"loss", 0.25}}, 2);
  first.save();
  CHECK(lines_of(read_file(first.metrics_file())) ==
        std::vector<std::string>{"epoch,step,loss", "0,1,0.5", "0,2,0.25"});
  first.log_metrics({{"epoch", 1}, {"acc", 0.75}}, 3);
  first.save();
  CHECK(lines_of(read_file(first.metrics_file())) ==
        std::vector<std::string>{"epoch,step,acc,loss", "0,1,,0.5", "0,2,,0.25", "1,3,0.75,"});
  CHECK_FALSE(std::filesystem::exists(first.log_dir() / "metrics.csv.tmp"));

  CSVLogger second(dir.path());
  CHECK(second.version() == 1);
  CSVLogger fixed(dir.path(), "fulgur_logs", 7);
  CHECK(fixed.log_dir().filename() == "version_7");
}

TEST_CASE("CSVLogger: hparams.yaml holds the hyper-parameters") {
  TempDir dir("csv-hparams");
  CSVLogger logger(dir.path());
  YAML::Node h;
  h["model"]["lr"] = 0.1;
  h["data"]["batch_size"] = 32;
  logger.log_hyperparams(h);
  const YAML::Node back = YAML::LoadFile((logger.log_dir() / "hparams.yaml").string());
  CHECK(back["model"]["lr"].as<double>() == doctest::Approx(0.1));
  CHECK(back["data"]["batch_size"].as<int>() == 32);
}

TEST_CASE("CSVLogger: a Trainer run writes one row per logged step and epoch") {
  TempDir dir("csv-trainer");
  testing::RecordingModule model;
  testing::RegressionData data(4, 2);
  Trainer trainer(testing::quiet_options(dir.path()).max_epochs(2).log_every_n_steps(2).num_sanity_val_steps(0));
  trainer.fit(model, data);
  CHECK(trainer.log_dir() == dir.path() / "fulgur_logs" / "version_0");
  const auto lines = lines_of(read_file(trainer.log_dir() / "metrics.csv"));
  REQUIRE(lines.size() == 1 + 4 + 2);  // header, 2 step rows per epoch, 1 val row per epoch
  CHECK(lines[0] == "epoch,step,train_loss,val_loss");
  CHECK(lines[1].rfind("0,2,", 0) == 0);
  CHECK(lines[2].rfind("0,4,", 0) == 0);
  CHECK(lines[3].rfind("0,4,,", 0) == 0);  // validation after epoch 0
  CHECK(lines[6].rfind("1,8,,", 0) == 0);
  CHECK(std::filesystem::exists(trainer.log_dir() / "hparams.yaml"));
}

}  // namespace csv_logger_test
