// CIFAR-10's binary batches (CIFAR10Batches) and the CIFAR10 DataModule on
// batch files written here in the real format (cifar-10-batches-bin:
// 3073-byte records, label then R, G, B planes).
#include "support/image_tree.hpp"
#include "support/test_support.hpp"

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/cifar10.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/trainer/cli/config_section.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <torch/torch.h>

#include <functional>

#include <doctest/doctest.h>

namespace cifar10_test {

using fulgur::CIFAR10;
using fulgur::CIFAR10Batches;
using fulgur::CIFAR10Options;
using fulgur::Stage;
using fulgur::DataError;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

/// Record r of a file: label (r * 3 + file) % 10 and pixel (c, y, x) = (file * 31 + r * 7 + c * 50 + y * 3 + x) % 256.
int64_t label_of(int64_t file, int64_t r) { return (r * 3 + file) % 10; }
uint8_t pixel_of(int64_t file, int64_t r, int64_t c, int64_t y, int64_t x) {
  return static_cast<uint8_t>((file * 31 + r * 7 + c * 50 + y * 3 + x) % 256);
}

void write_batch(const std::filesystem::path& path, int64_t file, int64_t records) {
  std::string bytes;
  for (int64_t r = 0; r < records; ++r) {
    bytes.push_back(static_cast<char>(label_of(file, r)));
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t y = 0; y < 32; ++y) {
        for (int64_t x = 0; x < 32; ++x) bytes.push_back(static_cast<char>(pixel_of(file, r, c, y, x)));
      }
    }
  }
  fulgur::testing::write_bytes(path, bytes);
}

void write_all(const std::filesystem::path& dir) {
  const auto train = CIFAR10Batches::files(true);
  for (size_t f = 0; f < train.size(); ++f) write_batch(dir / train[f], static_cast<int64_t>(f), 2 + static_cast<int64_t>(f));
  write_batch(dir / "test_batch.bin", 9, 4);
}

}  // namespace

TEST_CASE("CIFAR10Batches: records decode to HWC images and labels, files in order") {
  TempDir dir("cifar10");
  write_all(dir.path());
  const CIFAR10Batches train(dir.path(), true);
  const CIFAR10Batches test(dir.path(), false);
  REQUIRE(train.size() == 2 + 3 + 4 + 5 + 6);
  REQUIRE(test.size() == 4);
  CHECK(train.images().sizes() == torch::IntArrayRef({20, 32, 32, 3}));
  CHECK(train.images().dtype() == torch::kUInt8);
  // Every pixel of every record, in file order.
  int64_t index = 0;
  for (int64_t f = 0; f < 5; ++f) {
    for (int64_t r = 0; r < 2 + f; ++r, ++index) {
      CAPTURE(index);
      CHECK(train.labels()[index].item<int64_t>() == label_of(f, r));
      auto expected = torch::empty({32, 32, 3}, torch::kUInt8);
      for (int64_t y = 0; y < 32; ++y)
        for (int64_t x = 0; x < 32; ++x)
          for (int64_t c = 0; c < 3; ++c) expected[y][x][c] = pixel_of(f, r, c, y, x);
      CHECK(torch::equal(train.images()[index], expected));
    }
  }
  CHECK(test.labels()[3].item<int64_t>() == label_of(9, 3));
  CHECK(train.label(5) == label_of(2, 0));
  CHECK(train.name(5) == (dir / "data_batch_3.bin").string() + "[0]");
  CHECK(train.name(19) == (dir / "data_batch_5.bin").string() + "[5]");
  CHECK(torch::equal(fulgur::image_to_tensor(*train.pixels(5)), train.images()[5]));
  CHECK_THROWS_AS(train.read(5), std::logic_error);
  CHECK_THROWS_AS(train.pixels(20), std::out_of_range);
  CHECK(train.classes().size() == 10);
  CHECK(train.classes()[0] == "airplane");
  // As an ImageDataset without a pipeline: ToTensor, float CHW in [0, 1].
  const fulgur::ImageDataset dataset(std::make_shared<CIFAR10Batches>(dir.path(), true));
  const auto example = dataset.get(5);
  CHECK(example.input.sizes() == torch::IntArrayRef({3, 32, 32}));
  CHECK(example.input[1][2][3].item<float>() == doctest::Approx(pixel_of(2, 0, 1, 2, 3) / 255.0));
  CHECK(example.target.item<int64_t>() == label_of(2, 0));
}

TEST_CASE("CIFAR10Batches: a missing file, a partial record or a bad label is a DataError naming the file") {
  TempDir dir("cifar10-bad");
  write_all(dir.path());
  const auto batch3 = dir / "data_batch_3.bin";
  std::filesystem::remove(batch3);
  CHECK(error_of([&] { CIFAR10Batches(dir.path(), true); }).find("[CIFAR10Batches] '" + batch3.string() + "' cannot be opened") == 0);
  std::string bytes(3073 * 2 + 100, '\1');
  fulgur::testing::write_bytes(batch3, bytes);
  CHECK(error_of([&] { CIFAR10Batches(dir.path(), true); }) ==
        "[CIFAR10Batches] '" + batch3.string() + "' has 6246 bytes, not a whole number of 3073-byte records");
  bytes.resize(3073 * 2);
  bytes[3073] = 10;
  fulgur::testing::write_bytes(batch3, bytes);
  CHECK(error_of([&] { CIFAR10Batches(dir.path(), true); }) ==
        "[CIFAR10Batches] '" + batch3.string() + "' record 1 has label 10; CIFAR-10 labels are 0-9");
}

namespace {

std::vector<fulgur::Batch> collect(fulgur::DataLoader& loader) {
  std::vector<fulgur::Batch> batches;
  auto it = loader.iterate();
  while (auto batch = it->next()) batches.push_back(std::move(*batch));
  return batches;
}

torch::Tensor inputs_of(const std::vector<fulgur::Batch>& batches) {
  std::vector<torch::Tensor> parts;
  for (const auto& b : batches) parts.push_back(b.input);
  return torch::cat(parts);
}

torch::Tensor targets_of(const std::vector<fulgur::Batch>& batches) {
  std::vector<torch::Tensor> parts;
  for (const auto& b : batches) parts.push_back(b.target);
  return torch::cat(parts);
}

}  // namespace

TEST_CASE("CIFAR10 DataModule: splits, normalisation, and crop + flip fixed by (seed, epoch, index) for any num_workers") {
  TempDir dir("cifar10-module");
  write_all(dir.path());
  const auto options = CIFAR10Options(dir.path().string()).batch_size(6).num_workers(0).seed(4);
  CHECK(options.augment());
  CHECK(options.mean() == std::vector<double>{0.4914, 0.4822, 0.4465});

  CIFAR10 data(options);
  CHECK_THROWS_AS(data.train_dataloader(), std::logic_error);
  data.setup(Stage::Fit);
  REQUIRE(data.train_source()->size() == 20);
  REQUIRE(data.test_source()->size() == 4);
  auto train = data.train_dataloader();
  auto val = data.val_dataloader();
  CHECK(train->size() == 4);  // 20 / 6, the last batch partial
  CHECK(val->size() == 1);

  // Validation: test_batch.bin in order, ToTensor + Normalize with the CIFAR-10 statistics.
  const auto val_batches = collect(*val);
  CHECK(torch::equal(targets_of(val_batches), data.test_source()->labels()));
  const double v = pixel_of(9, 2, 0, 5, 7);
  CHECK(inputs_of(val_batches)[2][0][5][7].item<float>() == doctest::Approx((v / 255.0 - 0.4914) / 0.2470).epsilon(1e-6));

  // Training: every sample is its image cropped from the 4-padded image and
  // maybe mirrored, exactly as SampleRandom(sample_seed(4, epoch, index)) decides.
  auto loader = std::dynamic_pointer_cast<fulgur::DatasetLoader>(train);
  REQUIRE(loader != nullptr);
  const auto pipeline = CIFAR10::train_pipeline(options);
  for (const int64_t epoch : {0, 1}) {
    CAPTURE(epoch);
    train->set_epoch(epoch);
    const auto order = loader->epoch_order();
    const auto batches = collect(*train);
    const auto inputs = inputs_of(batches);
    REQUIRE(inputs.size(0) == 20);
    for (int64_t k = 0; k < 20; ++k) {
      const int64_t index = order[static_cast<size_t>(k)];
      fulgur::SampleRandom random(fulgur::sample_seed(4, epoch, index));
      const auto expected = (*pipeline)(*data.train_source()->pixels(index), random);
      CHECK(torch::equal(inputs[k], expected));
      CHECK(targets_of(batches)[k].item<int64_t>() == data.train_source()->label(index));
    }
  }
  train->set_epoch(0);
  const auto epoch0 = inputs_of(collect(*train));
  train->set_epoch(1);
  CHECK_FALSE(torch::equal(epoch0, inputs_of(collect(*train))));

  // The same (seed, epoch): the same batches with 1, 2 or 3 loader threads.
  for (const int64_t workers : {1, 2, 3}) {
    CAPTURE(workers);
    CIFAR10 threaded(CIFAR10Options(options).num_workers(workers));
    threaded.setup(Stage::Fit);
    auto threaded_train = threaded.train_dataloader();
    threaded_train->set_epoch(0);
    CHECK(torch::equal(inputs_of(collect(*threaded_train)), epoch0));
  }

  // The pipeline is RandomCrop(32, 4) + flip: each sample is a 32x32 window
  // of its zero-padded image, mirrored or not; most moved, some mirrored.
  const fulgur::RandomCrop crop(32, 4);
  const fulgur::RandomHorizontalFlip mirror(1.0);
  const auto eval = CIFAR10::eval_pipeline(options);
  train->set_epoch(0);
  const auto order = loader->epoch_order();
  int moved = 0;
  int flipped = 0;
  for (int64_t k = 0; k < 20; ++k) {
    CAPTURE(k);
    const auto original = *data.train_source()->pixels(order[static_cast<size_t>(k)]);
    bool matched = false;
    for (int64_t top = 0; top <= 8 && !matched; ++top) {
      for (int64_t left = 0; left <= 8 && !matched; ++left) {
        for (const bool flip : {false, true}) {
          fulgur::SampleRandom unused(0);
          fulgur::Image window = crop.crop_at(original, top, left);
          if (flip) window = mirror.apply(std::move(window), unused);
          if (torch::equal(epoch0[k], (*eval)(std::move(window), unused))) {
            matched = true;
            moved += (top != 4 || left != 4) ? 1 : 0;
            flipped += flip ? 1 : 0;
            break;
          }
        }
      }
    }
    CHECK(matched);
  }
  CHECK(moved >= 10);
  CHECK(flipped >= 3);
  CHECK(flipped <= 17);

  // Without augment, training images are the plain normalised images.
  CIFAR10 plain(CIFAR10Options(options).augment(false).shuffle(false));
  plain.setup(Stage::Fit);
  fulgur::SampleRandom unused(0);
  const auto first = inputs_of(collect(*plain.train_dataloader()))[0];
  CHECK(torch::equal(first, (*CIFAR10::eval_pipeline(options))(*plain.train_source()->pixels(0), unused)));

  // Validate / Test need only test_batch.bin.
  std::filesystem::remove(dir / "data_batch_1.bin");
  CIFAR10 test_only(options);
  test_only.setup(Stage::Test);
  CHECK(test_only.test_dataloader()->size() == 1);
  CHECK_THROWS_AS(test_only.train_dataloader(), std::logic_error);
  CIFAR10 fit(options);
  CHECK(error_of([&] { fit.setup(Stage::Fit); }).find("[CIFAR10Batches] '" + (dir / "data_batch_1.bin").string()) == 0);
}

TEST_CASE("CIFAR10Options: validated at construction and read from YAML") {
  CHECK_THROWS_WITH_AS(CIFAR10{CIFAR10Options{}}, "[CIFAR10Options] root must be given (it has no default), got \"\"",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(CIFAR10(CIFAR10Options("/data").batch_size(0)),
                       "[CIFAR10Options] batch_size must be >= 1, got 0", std::invalid_argument);
  fulgur::cli::ConfigSection section(
      YAML::Load("{root: /data/cifar, batch_size: 64, augment: false, num_workers: 1, seed: 9}"), "data");
  const auto options = fulgur::cli::read_options<CIFAR10Options>(section);
  CHECK(options.root() == "/data/cifar");
  CHECK(options.batch_size() == 64);
  CHECK_FALSE(options.augment());
  CHECK(options.seed() == std::optional<int64_t>(9));
  CHECK(section.unread_keys().empty());
  // Construction touches no files.
  CIFAR10 lazy(CIFAR10Options("/does/not/exist"));
  CHECK_THROWS_AS(lazy.setup(Stage::Fit), DataError);
  // The example config's data section holds only known keys.
  fulgur::cli::ConfigSection example(
      YAML::LoadFile(std::string(FULGUR_SOURCE_DIR) + "/examples/cifar10/config.yaml")["data"], "data");
  CHECK_NOTHROW(fulgur::cli::read_options<CIFAR10Options>(example));
}

}  // namespace cifar10_test
