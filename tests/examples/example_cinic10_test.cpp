// The example binary end to end, as a user runs it, on the digits exported
// by scripts/setup.sh (real PNG files in the CINIC-10 layout).
#include "support/test_support.hpp"

#include <fulgur/version.hpp>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace example_cinic10_test {

using fulgur::testing::last_csv_value;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kBinary = std::string(FULGUR_BINARY_DIR) + "/bin/cinic10";
const std::string kDigits = std::string(FULGUR_SOURCE_DIR) + "/data/digits-cinic";

}  // namespace

TEST_CASE("example cinic10: fit + test on the digits reaches high accuracy") {
  REQUIRE_MESSAGE(std::filesystem::exists(kDigits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("example-fit");
  const auto result = run_command(kBinary + " fit --config " + FULGUR_SOURCE_DIR +
                                      "/examples/cinic10/digits.yaml --trainer.max_epochs 4 --data.root " + kDigits +
                                      " --trainer.default_root_dir " + dir.path().string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto run = dir.path() / "fulgur_logs" / "version_0";
  CHECK(result.output.find("fulgur: run folder " + run.string()) != std::string::npos);
  const std::string csv = read_file(run / "metrics.csv");
  CHECK(csv.rfind("epoch,step,test_acc,test_acc_top5,test_loss,train_loss,val_acc,val_acc_top5,val_f1,val_loss\n", 0) == 0);
  CHECK(last_csv_value(csv, "test_acc") >= 0.95);
  CHECK(last_csv_value(csv, "val_acc") >= 0.95);
  CHECK(last_csv_value(csv, "val_f1") >= 0.9);  // macro F1 over the 10 digits
  const std::string hparams = read_file(run / "hparams.yaml");
  CHECK(hparams.find("max_epochs: 4") != std::string::npos);
}

TEST_CASE("example cinic10: the vision transformer split over tp 2 by its plan trains as on one process") {
  REQUIRE_MESSAGE(std::filesystem::exists(kDigits + "/train"), "demo data missing: run scripts/setup.sh");
  TempDir dir("example-vit");
  // Every rank reads the whole set in the same order, as one process does.
  const std::string fit = kBinary + " fit --config " + FULGUR_SOURCE_DIR + "/examples/cinic10/digits.yaml --data.root " +
                          kDigits + " --model.arch vit --trainer.max_epochs 2 --trainer.limit_train_batches 20 " +
                          "--trainer.use_distributed_sampler false --data.num_workers 0 --trainer.default_root_dir ";
  const auto one = run_command(fit + (dir.path() / "one").string(), 300);
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  const auto tp = run_command(fit + (dir.path() / "tp").string() +
                                  " --trainer.devices 2 --trainer.strategy model_parallel "
                                  "--trainer.model_parallel.tensor_parallel_size 2",
                              300);
  INFO(tp.output);
  REQUIRE(tp.exit_code == 0);
  auto csv = [&](const std::string& name) { return read_file(dir.path() / name / "fulgur_logs" / "version_0" / "metrics.csv"); };
  CHECK(last_csv_value(csv("one"), "val_acc") > 0.3);  // it learns (10 classes)
  CHECK(last_csv_value(csv("tp"), "val_loss") == doctest::Approx(last_csv_value(csv("one"), "val_loss")).epsilon(1e-5));
  CHECK(last_csv_value(csv("tp"), "test_acc") == doctest::Approx(last_csv_value(csv("one"), "test_acc")).epsilon(1e-6));
}

TEST_CASE("example cinic10: predict writes a tensor Python's torch.load reads") {
  TempDir dir("example-predict");
  const auto result = run_command(kBinary + " predict --config " + FULGUR_SOURCE_DIR +
                                  "/examples/cinic10/digits.yaml --data.root " + kDigits +
                                  " --trainer.default_root_dir " + dir.path().string());
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto file = dir.path() / "fulgur_logs" / "version_0" / "predictions.pt";
  const auto loaded = run_command(std::string(FULGUR_PYTHON) + " -c \"import torch; p = torch.load('" +
                                  file.string() + "', weights_only=True); print(tuple(p.shape), p.dtype, " +
                                  "int(p.min()) >= 0 and int(p.max()) <= 9)\"");
  INFO(loaded.output);
  CHECK(loaded.exit_code == 0);
  CHECK(loaded.output == "(270,) torch.int64 True\n");
}

TEST_CASE("example cinic10: bad input exits 2 and creates no run folder") {
  TempDir dir("example-bad");
  const std::string root = " --trainer.default_root_dir " + dir.path().string();
  const auto missing = run_command(kBinary + " fit --data.root " + (dir.path() / "nowhere").string() + root);
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find((dir.path() / "nowhere").string()) != std::string::npos);
  const auto typo = run_command(kBinary + " fit --data.root " + kDigits + " --trainer.max_epoch 1" + root);
  CHECK(typo.exit_code == 2);
  CHECK(typo.output == "error: unknown key 'trainer.max_epoch'; did you mean 'trainer.max_epochs'?\n");
  const auto bad_config = run_command(kBinary + " fit --config " + (dir.path() / "none.yaml").string() + root);
  CHECK(bad_config.exit_code == 2);
  CHECK(bad_config.output == "error: --config " + (dir.path() / "none.yaml").string() + ": file not found\n");
  CHECK_FALSE(std::filesystem::exists(dir.path() / "fulgur_logs"));
}

TEST_CASE("example cinic10: --help, --version and --print_config") {
  const auto help = run_command(kBinary + " --help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("usage: ") != std::string::npos);
  CHECK(help.output.find("  --version ") != std::string::npos);
  // --version alone or after a subcommand: one line, exit 0, nothing trained.
  for (const char* args : {" --version", " fit --data.root nowhere --version"}) {
    const auto version = run_command(kBinary + args);
    CHECK(version.exit_code == 0);
    CHECK(version.output == fmt::format("fulgur {}\n", fulgur::kVersion));
  }
  const auto printed = run_command(kBinary + " fit --print_config --data.root x --model.arch mlp");
  CHECK(printed.exit_code == 0);
  CHECK(printed.output.find("arch: mlp") != std::string::npos);
  CHECK(printed.output.find("batch_size: 128") != std::string::npos);
  // Bare: what is required and missing is shown as such, not an error.
  const auto bare = run_command(kBinary + " fit --print_config");
  INFO(bare.output);
  CHECK(bare.exit_code == 0);
  CHECK(bare.output.find("root: <required>") != std::string::npos);
  CHECK(bare.output.find("lr: 0.05\n") != std::string::npos);  // the shortest exact form
  CHECK(bare.output.find("num_workers:") != std::string::npos);  // the options after root are shown too
  // A value given is still checked.
  const auto bad = run_command(kBinary + " fit --print_config --data.batch_size 0");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output == "error: data.batch_size: must be >= 1, got 0\n");
}

}  // namespace example_cinic10_test
