// The cifar10 example binary end to end, as a user runs it, on CIFAR-10
// binary batches written here in the real format (3073-byte records: label,
// then the red, green and blue 32x32 planes).
#include "support/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace example_cifar10_test {

using fulgur::testing::last_csv_value;
using fulgur::testing::read_file;
using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

const std::string kBinary = std::string(FULGUR_BINARY_DIR) + "/bin/cifar10";

/// `records` learnable records: class c has its own colour (bit k of c + 1
/// lights channel k, c >= 7 adds a bright top half) plus noise.
void write_batch(const std::filesystem::path& path, int64_t records, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> noise(0, 60);
  std::string bytes;
  for (int64_t r = 0; r < records; ++r) {
    const int label = static_cast<int>(r % 10);
    bytes.push_back(static_cast<char>(label));
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 32; ++y) {
        for (int x = 0; x < 32; ++x) {
          int value = noise(random) + ((((label % 7) + 1) >> c) & 1) * 150;
          if (label >= 7 && y < 16) value = 255 - noise(random);
          bytes.push_back(static_cast<char>(value));
        }
      }
    }
  }
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_cifar10(const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  for (int i = 1; i <= 5; ++i) write_batch(dir / ("data_batch_" + std::to_string(i) + ".bin"), 60, 10 + i);
  write_batch(dir / "test_batch.bin", 100, 99);
}

}  // namespace

TEST_CASE("example cifar10: fit + test on generated binary batches learns the classes") {
  TempDir dir("example-cifar10");
  const auto data = dir.path() / "cifar-10-batches-bin";
  write_cifar10(data);
  const auto result = run_command(kBinary + " fit --config " + FULGUR_SOURCE_DIR +
                                      "/examples/cifar10/config.yaml --model.arch cnn --trainer.max_epochs 3 "
                                      "--trainer.accelerator cpu --trainer.enable_progress_bar false "
                                      "--data.batch_size 20 --data.num_workers 2 --test_after_fit true --data.root " +
                                      data.string() + " --trainer.default_root_dir " + (dir.path() / "runs").string(),
                                  600);
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto run = dir.path() / "runs" / "fulgur_logs" / "version_0";
  const std::string csv = read_file(run / "metrics.csv");
  CHECK(last_csv_value(csv, "val_acc") >= 0.9);
  CHECK(last_csv_value(csv, "test_acc") >= 0.9);
  const std::string hparams = read_file(run / "hparams.yaml");
  CHECK(hparams.find("augment: true") != std::string::npos);
  CHECK(hparams.find("root: " + data.string()) != std::string::npos);
}

TEST_CASE("example cifar10: a missing or damaged batch file exits 2 naming it") {
  TempDir dir("example-cifar10-bad");
  const auto data = dir.path() / "batches";
  write_cifar10(data);
  std::filesystem::remove(data / "data_batch_4.bin");
  const std::string common = " --trainer.default_root_dir " + (dir.path() / "runs").string() + " --data.root " + data.string();
  const auto missing = run_command(kBinary + " fit" + common);
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find(fmt::format("'{}' cannot be opened", (data / "data_batch_4.bin").string())) !=
        std::string::npos);
  std::ofstream(data / "data_batch_4.bin", std::ios::binary) << "short";
  const auto partial = run_command(kBinary + " fit" + common);
  CHECK(partial.exit_code == 2);
  CHECK(partial.output.find("has 5 bytes, not a whole number of 3073-byte records") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path() / "runs" / "fulgur_logs"));
  const auto printed = run_command(kBinary + " fit --print_config --data.root x");
  CHECK(printed.exit_code == 0);
  CHECK(printed.output.find("augment: true") != std::string::npos);
  CHECK(printed.output.find("0.4914") != std::string::npos);
}

}  // namespace example_cifar10_test
