// One version, from project(fulgur VERSION ...) in CMakeLists.txt: the
// generated <fulgur/version.hpp>, --version, hparams.yaml's first line and a
// checkpoint's fulgur_version all say it. (The installed package's
// fulgurConfigVersion.cmake is checked by install_test.)
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/engine/checkpoint/checkpoint_io.hpp>
#include <fulgur/trainer/cli/cli.hpp>
#include <fulgur/loggers/csv_logger.hpp>
#include <fulgur/version.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <regex>

namespace version_test {

using namespace fulgur;
using fulgur::testing::read_file;
using fulgur::testing::TempDir;

TEST_CASE("version: the header says project(VERSION) of CMakeLists.txt, as MAJOR.MINOR.PATCH") {
  const std::string cmake = read_file(std::filesystem::path(FULGUR_SOURCE_DIR) / "CMakeLists.txt");
  std::smatch match;
  REQUIRE(std::regex_search(cmake, match, std::regex(R"(project\(fulgur VERSION ([0-9]+\.[0-9]+\.[0-9]+))")));
  CHECK(std::string(kVersion) == match[1].str());
  CHECK(std::string(FULGUR_VERSION) == fmt::format("{}.{}.{}", FULGUR_VERSION_MAJOR, FULGUR_VERSION_MINOR, FULGUR_VERSION_PATCH));
}

TEST_CASE("version: --version is a flag of the command line, alone or after a subcommand") {
  CHECK(cli::version_line() == fmt::format("fulgur {}", kVersion));
  const char* alone[] = {"prog", "--version"};
  CHECK(cli::parse_arguments(2, alone).version);
  const char* after[] = {"prog", "fit", "--trainer.max_epochs", "1", "--version"};
  const auto args = cli::parse_arguments(5, after);
  CHECK(args.version);
  CHECK(args.overrides.size() == 1);
  const char* without[] = {"prog", "fit"};
  CHECK_FALSE(cli::parse_arguments(2, without).version);
}

TEST_CASE("version: hparams.yaml starts with a comment naming the version; its mapping is the hyper-parameters alone") {
  TempDir dir("version-hparams");
  CSVLogger logger(dir.path());
  YAML::Node h;
  h["model"]["lr"] = 0.1;
  logger.log_hyperparams(h);
  const std::string text = read_file(logger.log_dir() / "hparams.yaml");
  CHECK(text.rfind(fmt::format("# fulgur {}\n", kVersion), 0) == 0);
  const YAML::Node back = YAML::Load(text);
  CHECK(back.size() == 1);
  CHECK(back["model"]["lr"].as<double>() == doctest::Approx(0.1));
}

TEST_CASE("version: a Trainer's checkpoint records fulgur_version") {
  TempDir dir("version-ckpt");
  testing::RecordingModule model;
  testing::RegressionData data(4, 2);
  Trainer trainer(testing::quiet_options(dir.path()).max_epochs(1).num_sanity_val_steps(0));
  trainer.fit(model, data);
  const auto path = dir / "end.ckpt";
  trainer.save_checkpoint(path);
  const Checkpoint checkpoint = CheckpointIO::load(path);
  REQUIRE(checkpoint.contains(CheckpointIO::kVersionKey));
  CHECK(checkpoint.at(CheckpointIO::kVersionKey).toStringRef() == std::string(kVersion));
  CHECK(read_file(trainer.log_dir() / "hparams.yaml").rfind(fmt::format("# fulgur {}\n", kVersion), 0) == 0);
}

}  // namespace version_test
