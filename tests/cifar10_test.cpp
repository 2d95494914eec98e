// CIFAR10 on batch files written here in the real binary format
// (cifar-10-batches-bin: 3073-byte records, label then R, G, B planes).
#include "support/image_tree.hpp"
#include "support/test_support.hpp"

#include <fulgur/datamodules/cifar10.hpp>
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/dataset_loader.hpp>

#include <torch/torch.h>

#include <functional>

#include <doctest/doctest.h>

using fulgur::CIFAR10;
using fulgur::DataError;
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
  const auto train = CIFAR10::files(true);
  for (size_t f = 0; f < train.size(); ++f) write_batch(dir / train[f], static_cast<int64_t>(f), 2 + static_cast<int64_t>(f));
  write_batch(dir / "test_batch.bin", 9, 4);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("CIFAR10: records decode to HWC images and labels, files in order") {
  TempDir dir("cifar10");
  write_all(dir.path());
  const CIFAR10 train(dir.path(), true);
  const CIFAR10 test(dir.path(), false);
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
  // get() is ToTensor by default: float CHW in [0, 1].
  const auto example = train.get(5);
  CHECK(example.input.sizes() == torch::IntArrayRef({3, 32, 32}));
  CHECK(example.input[1][2][3].item<float>() == doctest::Approx(pixel_of(2, 0, 1, 2, 3) / 255.0));
  CHECK(example.target == label_of(2, 0));
  CHECK(CIFAR10::classes().size() == 10);
  CHECK(CIFAR10::classes()[0] == "airplane");
  // Through the threaded loader.
  fulgur::DatasetLoader loader(std::make_shared<CIFAR10>(dir.path(), true),
                               fulgur::DatasetLoaderOptions(8).num_workers(2).seed(0));
  auto it = loader.iterate();
  const auto batch = it->next();
  REQUIRE(batch.has_value());
  CHECK(batch->input.sizes() == torch::IntArrayRef({8, 3, 32, 32}));
}

TEST_CASE("CIFAR10: a missing file, a partial record or a bad label is a DataError naming the file") {
  TempDir dir("cifar10-bad");
  write_all(dir.path());
  const auto batch3 = dir / "data_batch_3.bin";
  std::filesystem::remove(batch3);
  CHECK(error_of([&] { CIFAR10(dir.path(), true); }).find("[CIFAR10] '" + batch3.string() + "' cannot be opened") == 0);
  std::string bytes(3073 * 2 + 100, '\1');
  fulgur::testing::write_bytes(batch3, bytes);
  CHECK(error_of([&] { CIFAR10(dir.path(), true); }) ==
        "[CIFAR10] '" + batch3.string() + "' has 6246 bytes, not a whole number of 3073-byte records");
  bytes.resize(3073 * 2);
  bytes[3073] = 10;
  fulgur::testing::write_bytes(batch3, bytes);
  CHECK(error_of([&] { CIFAR10(dir.path(), true); }) ==
        "[CIFAR10] '" + batch3.string() + "' record 1 has label 10; CIFAR-10 labels are 0-9");
}
