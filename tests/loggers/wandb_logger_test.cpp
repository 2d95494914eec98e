// WandbLogger: a real W&B offline run written by the wandb package, read
// back from its .wandb file (tests/support/read_wandb.py) and compared with
// the CSV logger's metrics.csv of the same run.
#include "support/test_support.hpp"

#include <fulgur/loggers/wandb_logger.hpp>

#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

namespace wandb_logger_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kReader = std::string(FULGUR_SOURCE_DIR) + "/tests/support/read_wandb.py";

// The one offline run wandb wrote under `run_folder`.
std::filesystem::path offline_run(const std::filesystem::path& run_folder) {
  std::vector<std::filesystem::path> found;
  for (const auto& entry : std::filesystem::directory_iterator(run_folder / "wandb")) {
    if (entry.path().filename().string().rfind("offline-run-", 0) == 0) found.push_back(entry.path());
  }
  REQUIRE(found.size() == 1);
  return found.front();
}

// What read_wandb.py finds in an offline run folder, as a YAML (JSON) tree.
YAML::Node read_with_wandb(const std::filesystem::path& folder) {
  const auto result = run_command(std::string(FULGUR_PYTHON) + " " + kReader + " " + folder.string() + " 2>&1", 120);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const size_t start = result.output.rfind("\n{");
  return YAML::Load(start == std::string::npos ? result.output : result.output.substr(start + 1));
}

// metrics.csv as rows of (step, {column: value}) with the empty cells left out.
std::vector<std::pair<int64_t, std::map<std::string, double>>> csv_rows(const std::string& csv) {
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) names.push_back(name);
  std::vector<std::pair<int64_t, std::map<std::string, double>>> rows;
  while (std::getline(in, line)) {
    std::stringstream cells(line);
    std::map<std::string, double> row;
    int64_t step = -1;
    size_t i = 0;
    for (std::string cell; std::getline(cells, cell, ','); ++i) {
      if (cell.empty()) continue;
      if (names[i] == "step") {
        step = std::stoll(cell);
      } else {
        row[names[i]] = std::stod(cell);
      }
    }
    rows.emplace_back(step, row);
  }
  return rows;
}

}  // namespace

TEST_CASE("wandb logger: a real fit writes an offline run with metrics.csv's rows and the config") {
  const std::string digits = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";
  REQUIRE_MESSAGE(std::filesystem::exists(digits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("wandb-fit");
  const auto result = run_command(
      std::string(FULGUR_BINARY_DIR) + "/bin/cinic10 fit --config " + FULGUR_SOURCE_DIR +
          "/examples/cinic10/digits.yaml --trainer.max_epochs 2 --data.root " + digits +
          " --trainer.enable_progress_bar false --trainer.default_root_dir " + dir.path().string() +
          " --trainer.logger '[csv, {class_path: WandbLogger, init_args: {project: digits, name: short-fit, python: " +
          FULGUR_PYTHON + "}}]'",
      600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto run_folder = dir.path() / "fulgur_logs" / "version_0";
  const auto offline = offline_run(run_folder);
  const YAML::Node read = read_with_wandb(offline);
  CHECK(read["run"]["project"].as<std::string>() == "digits");
  CHECK(read["run"]["name"].as<std::string>() == "short-fit");
  CHECK(read["exit_code"].as<int>() == 0);

  // Every row of metrics.csv (train rows, validation rows, the test after
  // fit) is one history row at the same trainer/global_step, same values.
  const auto rows = csv_rows(read_file(run_folder / "metrics.csv"));
  const YAML::Node history = read["history"];
  REQUIRE(rows.size() >= 10);
  REQUIRE(history.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(history[i]["trainer/global_step"].as<int64_t>() == rows[i].first);
    for (const auto& name_value : rows[i].second) {
      const auto& name = name_value.first;  // not bound: clang 14 cannot capture a binding
      const auto& value = name_value.second;
      INFO(name);
      REQUIRE(history[i][name].IsDefined());
      CHECK(history[i][name].as<double>() == value);
    }
  }
  CHECK(history[rows.size() - 1]["test_acc"].IsDefined());

  // The config is the resolved configuration, hparams.yaml, with its types.
  const YAML::Node hparams = YAML::LoadFile((run_folder / "hparams.yaml").string());
  const YAML::Node config = read["config"];
  CHECK(config["trainer"]["max_epochs"].as<int64_t>() == 2);
  CHECK(config["model"]["lr"].as<double>() == hparams["model"]["lr"].as<double>());
  CHECK(config["data"]["root"].as<std::string>() == digits);
  CHECK(config["trainer"]["logger"][1]["init_args"]["project"].as<std::string>() == "digits");
  CHECK(config["seed_everything"].as<int64_t>() == hparams["seed_everything"].as<int64_t>());

  // wandb's own command line recognises it as a run to upload.
  const auto sync = run_command(std::string(FULGUR_SOURCE_DIR) + "/.venv/bin/wandb sync --dry-run " +
                                    offline.string() + " 2>&1",
                                120);
  INFO(sync.output);
  CHECK(sync.exit_code == 0);
  CHECK(sync.output.find("Would sync 1 run") != std::string::npos);
}

TEST_CASE("wandb logger: YAML types and non-finite values reach wandb; a failed run ends with exit code 1") {
  TempDir dir("wandb-direct");
  {
    WandbLogger logger(WandbLoggerOptions().python(FULGUR_PYTHON).id("direct1"), RunFolder{dir.path(), "logs", 7});
    CHECK(logger.log_dir() == dir.path() / "logs" / "version_7");
    logger.log_hyperparams(YAML::Load(R"(
      count: 3
      ratio: 0.25
      flag: true
      quoted: "12"
      none: null
      text: "line \"one\"\ttab"
      list: [1, two, 3.5]
      nested: {a: {b: -4}}
    )"));
    logger.log_metrics({{"loss", 1.5}, {"bad", std::nan("")}, {"big", INFINITY}}, 3);
    logger.log_metrics({{"loss", 0.1}}, 5);
    logger.finalize("failed");
  }  // destruction finishes the W&B run and waits for it
  const YAML::Node read = read_with_wandb(offline_run(dir.path() / "logs" / "version_7"));
  CHECK(read["run"]["id"].as<std::string>() == "direct1");
  CHECK(read["exit_code"].as<int>() == 1);
  const YAML::Node config = read["config"];
  CHECK(config["count"].as<std::string>() == "3");
  CHECK(config["ratio"].as<double>() == 0.25);
  CHECK(config["flag"].as<bool>());
  CHECK(config["quoted"].Tag() == "!");  // JSON "12": a string
  CHECK(config["none"].IsNull());
  CHECK(config["text"].as<std::string>() == "line \"one\"\ttab");
  CHECK(config["list"][1].as<std::string>() == "two");
  CHECK(config["nested"]["a"]["b"].as<int>() == -4);
  const YAML::Node history = read["history"];
  REQUIRE(history.size() == 2);
  CHECK(history[0]["trainer/global_step"].as<int64_t>() == 3);
  CHECK(history[0]["loss"].as<double>() == 1.5);
  CHECK(std::isnan(history[0]["bad"].as<double>()));
  CHECK(std::isinf(history[0]["big"].as<double>()));
  CHECK(history[1]["trainer/global_step"].as<int64_t>() == 5);

  WandbLogger missing(WandbLoggerOptions().python("/bin/false-python"), RunFolder{dir.path(), "logs", 8});
  CHECK_THROWS_WITH(missing.log_metrics({{"loss", 1.0}}, 0),
                    doctest::Contains("WandbLogger: cannot start '/bin/false-python'"));
  // An interpreter without the package: the import error, and where to get it.
  WandbLogger no_wandb(WandbLoggerOptions().python("/usr/bin/python3"), RunFolder{dir.path(), "logs", 9});
  CHECK_THROWS_WITH(no_wandb.log_metrics({{"loss", 1.0}}, 0),
                    doctest::Contains("'/usr/bin/python3' cannot import wandb: No module named 'wandb'"));
}

}  // namespace wandb_logger_test
