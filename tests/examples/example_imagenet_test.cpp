// The imagenet example binary end to end on tiny generated trees of real PNG
// files, in each data format, and with bad files in one and two processes.
#include "support/image_tree.hpp"
#include "support/test_support.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

namespace example_imagenet_test {

using fulgur::testing::run_command;
using fulgur::testing::TempDir;

namespace {

namespace fs = std::filesystem;

const std::string kBinary = std::string(FULGUR_BINARY_DIR) + "/bin/imagenet";
const std::string kPack = std::string(FULGUR_BINARY_DIR) + "/bin/fulgur_pack";
const std::vector<std::string> kWnids = {"n01440764", "n01443537", "n01484850"};

void write_tree(const fs::path& root) {
  fulgur::testing::write_class_folders(root / "train", kWnids, 8, 0);
  fulgur::testing::write_class_folders(root / "val", kWnids, 3, 900);
}

std::string fit(const TempDir& dir, const fs::path& root, const std::string& extra) {
  return kBinary + " fit --seed_everything 1 --trainer.accelerator cpu --trainer.max_epochs 2 " +
         "--trainer.enable_progress_bar false --trainer.process_group_timeout 60 --trainer.default_root_dir " +
         (dir / "run").string() + " --model.num_classes 3 --model.lr 0.05 --data.root " + root.string() +
         " --data.batch_size 4 --data.num_workers 2 --data.crop_size 12 --data.resize_size 14 " + extra;
}

/// The batches each rank reports ("imagenet: rank R ran N training batches").
std::map<int64_t, int64_t> batches_by_rank(const std::string& output) {
  std::map<int64_t, int64_t> out;
  const std::regex line("imagenet: rank (\\d+) ran (\\d+) training batches");
  for (auto it = std::sregex_iterator(output.begin(), output.end(), line); it != std::sregex_iterator(); ++it) {
    out[std::stoll((*it)[1])] = std::stoll((*it)[2]);
  }
  return out;
}

int64_t count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("example imagenet: fit on class folders and an index file") {
  TempDir dir("example-imagenet");
  write_tree(dir / "data");
  const auto folders = run_command(fit(dir, dir / "data", "--data.format folder --data.augment true"), 300);
  INFO(folders.output);
  REQUIRE(folders.exit_code == 0);
  CHECK(batches_by_rank(folders.output) == std::map<int64_t, int64_t>{{0, 12}});  // 24 images / 4, 2 epochs
  // The 16x16 images come out as crop_size x crop_size crops.
  CHECK(folders.output.find("training batches, inputs [4, 3, 12, 12]") != std::string::npos);
  CHECK(fs::exists(dir / "run" / "fulgur_logs" / "version_0" / "metrics.csv"));
  // decode: auto (the default) says once that it decodes on the CPU, and why.
  CHECK(count(folders.output, "fulgur: decode auto: decoding JPEGs on the CPU: the run's device is cpu") == 1);
  const auto gpu = run_command(fit(dir, dir / "data", "--data.decode gpu"), 300);
  CHECK(gpu.exit_code == 2);
  CHECK(count(gpu.output, "decode gpu: cannot decode on the GPU: the run's device is cpu, not a CUDA device") == 1);

  std::ofstream train(dir / "data" / "train.csv");
  for (size_t c = 0; c < 3; ++c) {
    for (int i = 0; i < 8; ++i) train << "train/" << kWnids[c] << "/img_" << i << ".png," << c << "\n";
  }
  train.close();
  std::ofstream val(dir / "data" / "val.csv");
  for (size_t c = 0; c < 3; ++c) val << "val/" << kWnids[c] << "/img_0.png," << c << "\n";
  val.close();
  const auto index = run_command(fit(dir, dir / "data", "--data.format index"), 300);
  INFO(index.output);
  REQUIRE(index.exit_code == 0);
  CHECK(batches_by_rank(index.output) == std::map<int64_t, int64_t>{{0, 12}});
}

#ifdef FULGUR_WITH_HDF5
TEST_CASE("example imagenet: fit on HDF5 packs made by fulgur_pack") {
  TempDir dir("example-imagenet-hdf5");
  write_tree(dir / "data");
  const auto packed = run_command(kPack + " --splits " + (dir / "data").string() + " " + (dir / "packs").string(), 120);
  INFO(packed.output);
  REQUIRE(packed.exit_code == 0);
  CHECK(packed.output.find("packed 24 images") != std::string::npos);
  CHECK(packed.output.find("packed 9 images") != std::string::npos);
  const auto hdf5 = run_command(fit(dir, dir / "packs", "--data.format hdf5"), 300);
  INFO(hdf5.output);
  REQUIRE(hdf5.exit_code == 0);
  CHECK(batches_by_rank(hdf5.output) == std::map<int64_t, int64_t>{{0, 12}});
  CHECK(hdf5.output.find("training batches, inputs [4, 3, 12, 12]") != std::string::npos);
}
#else
TEST_CASE("example imagenet: without HDF5, fulgur_pack and format hdf5 fail naming the pack") {
  TempDir dir("example-imagenet-no-hdf5");
  write_tree(dir / "data");
  const auto packed = run_command(kPack + " --splits " + (dir / "data").string() + " " + (dir / "packs").string(), 120);
  // "'<pack>': fulgur was built without HDF5", built by appending (g++ 12
  // warns, -Wstringop-overflow, on "'" + string).
  const auto without_hdf5 = [](const fs::path& pack) {
    return std::string("'").append(pack.string()).append("': fulgur was built without HDF5");
  };
  INFO(packed.output);
  CHECK(packed.exit_code == 2);
  CHECK(packed.output.find(without_hdf5(dir / "packs" / "train.h5")) != std::string::npos);
  const auto hdf5 = run_command(fit(dir, dir / "data", "--data.format hdf5"), 300);
  INFO(hdf5.output);
  CHECK(hdf5.exit_code != 0);
  CHECK(hdf5.output.find(without_hdf5(dir / "data" / "train.h5")) != std::string::npos);
}
#endif

TEST_CASE("example imagenet: a bad image exits 2 naming it; skip_bad_samples keeps every DDP rank in step") {
  TempDir dir("example-imagenet-bad");
  write_tree(dir / "data");
  const fs::path train = dir / "data" / "train";
  const fs::path empty = train / kWnids[0] / "img_1.png";
  const fs::path truncated = train / kWnids[1] / "img_5.png";
  const fs::path bad_crc = train / kWnids[2] / "img_6.png";
  fulgur::testing::damage_pngs(empty, truncated, bad_crc);

  const auto strict = run_command(fit(dir, dir / "data", "--data.shuffle false"), 300);
  INFO(strict.output);
  CHECK(strict.exit_code == 2);
  CHECK(strict.output.find(fmt::format("'{}': empty file (0 bytes)", empty.string())) != std::string::npos);

  // 24 images over 2 ranks, batches of 4: 3 batches per rank per epoch.
  const auto ddp = run_command(fit(dir, dir / "data", "--trainer.devices 2 --data.skip_bad_samples true"), 300);
  INFO(ddp.output);
  REQUIRE(ddp.exit_code == 0);
  CHECK(batches_by_rank(ddp.output) == std::map<int64_t, int64_t>{{0, 6}, {1, 6}});
  for (const fs::path& bad : {empty, truncated, bad_crc}) {
    CAPTURE(bad);
    // Logged once by each rank that met it, not once per epoch or per batch.
    const int64_t logged = count(ddp.output, bad.string());
    CHECK(logged >= 1);
    CHECK(logged <= 2);
  }
  CHECK(count(ddp.output, "skipping bad sample") <= 6);
  // Each rank reports its own count; together they saw all three files.
  const std::regex skipped("imagenet: skipped (\\d+) bad training");
  int64_t total = 0, reports = 0;
  for (auto it = std::sregex_iterator(ddp.output.begin(), ddp.output.end(), skipped); it != std::sregex_iterator(); ++it) {
    total += std::stoll((*it)[1]);
    ++reports;
  }
  CHECK(reports == 2);
  CHECK(total >= 3);
}

}  // namespace example_imagenet_test
