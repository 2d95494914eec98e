// The uint8 transforms against torchvision on fixed parameters (golden
// values from tests/golden/make_image_golden.py), and the per-sample
// determinism of random augmentation.
#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/images/transforms/center_crop.hpp>
#include <fulgur/datamodules/images/transforms/compose.hpp>
#include <fulgur/datamodules/images/transforms/normalize.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/images/transforms/random_resized_crop.hpp>
#include <fulgur/datamodules/images/transforms/resize.hpp>
#include <fulgur/datamodules/images/transforms/to_tensor.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <doctest/doctest.h>

#include "support/image_golden.hpp"
#include "support/test_support.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace image_transforms_test {

namespace fs = std::filesystem;
using namespace fulgur;
using fulgur::testing::ImageGolden;
using fulgur::testing::max_abs_diff;
using fulgur::testing::TempDir;

namespace {

const uint8_t* data_of(const std::string& bytes) { return reinterpret_cast<const uint8_t*>(bytes.data()); }

Image decode_file(const fs::path& path) {
  const auto bytes = read_image_bytes(path);
  return decode_image_rgb(data_of(bytes), bytes.size(), path.string());
}

Image copy(const Image& image) {
  Image out(image.height, image.width);
  std::memcpy(out.pixels.get(), image.pixels.get(), image.bytes());
  return out;
}

// Our result is within 1 of torchvision on PIL images (Pillow's
// resampling) and on uint8 tensors (the same LibTorch kernel, which rounds
// differently on a channels-first tensor than on our channels-last view).
void check_against_torchvision(const std::string& name, const Image& ours) {
  const ImageGolden& golden = ImageGolden::get();
  CAPTURE(name);
  CHECK(max_abs_diff(ours, golden.array(name + "_pil")) <= 1);
  CHECK(max_abs_diff(ours, golden.array(name + "_tensor")) <= 1);
}

const std::vector<double> kMean = {0.47889522, 0.47227842, 0.43047404};
const std::vector<double> kStd = {0.24205776, 0.23828046, 0.25874835};

}  // namespace

TEST_CASE("transforms: Resize, RandomResizedCrop, CenterCrop, flip equal torchvision on fixed parameters") {
  const ImageGolden& golden = ImageGolden::get();
  const Image photo = decode_file(golden.file("photo.png"));
  REQUIRE(photo.height == 375);
  SampleRandom random(0);
  check_against_torchvision("resize256", Resize(256).apply(copy(photo), random));
  check_against_torchvision("resize_exact_100x90", Resize(100, 90).apply(copy(photo), random));
  const RandomResizedCrop crop(224);
  check_against_torchvision("resized_crop_shrink", crop.crop_and_resize(photo, {37, 50, 300, 410}));
  check_against_torchvision("resized_crop_grow", crop.crop_and_resize(photo, {100, 200, 60, 80}));
  const Compose val({std::make_shared<Resize>(256), std::make_shared<CenterCrop>(224)});
  check_against_torchvision("val_pipeline", val.apply_uint8(copy(photo), random));
  check_against_torchvision("center_crop_odd", CenterCrop(101, 199).apply(copy(photo), random));
  check_against_torchvision("center_crop_pad", CenterCrop(400, 333).apply(copy(photo), random));
  check_against_torchvision("hflip", RandomHorizontalFlip(1.0).apply(copy(photo), random));
  CHECK(max_abs_diff(RandomHorizontalFlip(0.0).apply(copy(photo), random), photo) == 0);
}

TEST_CASE("transforms: RandomCrop with padding, ToTensor and Normalize equal torchvision") {
  const ImageGolden& golden = ImageGolden::get();
  const Image small = decode_file(golden.file("small.png"));
  const Image cropped = RandomCrop(32, 4).crop_at(small, 1, 7);
  CHECK(max_abs_diff(cropped, golden.array("random_crop_1_7")) == 0);

  const auto& expected = golden.array("to_tensor_normalize_chw");
  REQUIRE(expected.dtype == "float32");
  const torch::Tensor reference =
      torch::from_blob(const_cast<uint8_t*>(expected.bytes.data()), {3, 32, 32}, torch::kFloat32).clone();
  SampleRandom random(0);
  // Bit for bit: the fused table lookup and the separate objects alike.
  CHECK(torch::equal(Compose({}, Normalize(kMean, kStd))(copy(cropped), random), reference));
  CHECK(torch::equal(Normalize(kMean, kStd)(ToTensor()(cropped)), reference));
  CHECK_THROWS_AS(Normalize({0.5}, {0.0}), std::invalid_argument);
  CHECK_THROWS_AS(RandomCrop(64, 4).apply(copy(small), random), std::invalid_argument);
}

TEST_CASE("transforms: RandomResizedCrop samples like torchvision") {
  const ImageGolden& golden = ImageGolden::get();
  const RandomResizedCrop crop(224);
  SampleRandom random(7);
  // All ten attempts fail on these shapes: the deterministic fallback.
  for (const auto& [height, width] : {std::pair<int64_t, int64_t>{1000, 10}, {10, 1000}}) {
    const auto& p = golden.param("rrc_fallback_" + std::to_string(height) + "x" + std::to_string(width));
    const CropBox box = crop.sample_box(height, width, random);
    CHECK(std::vector<int64_t>{box.top, box.left, box.height, box.width} == p);
  }
  // Draws stay inside the image, within the scale and ratio ranges (up to rounding).
  double area_sum = 0;
  const int draws = 4000;
  for (int i = 0; i < draws; ++i) {
    const CropBox box = crop.sample_box(375, 500, random);
    REQUIRE(box.top >= 0);
    REQUIRE(box.left >= 0);
    REQUIRE(box.top + box.height <= 375);
    REQUIRE(box.left + box.width <= 500);
    const double fraction = double(box.height * box.width) / (375.0 * 500.0);
    CHECK(fraction >= 0.07);
    const double ratio = double(box.width) / double(box.height);
    CHECK(ratio >= 0.74);
    CHECK(ratio <= 1.35);
    area_sum += fraction;
  }
  // torchvision's mean area fraction on 4:3 images is about 0.5.
  CHECK(area_sum / draws > 0.42);
  CHECK(area_sum / draws < 0.6);
  // Resize(256): output sizes as torchvision computes them.
  for (const auto& [height, width] : std::vector<std::pair<int64_t, int64_t>>{
           {375, 500}, {500, 375}, {333, 1000}, {257, 256}, {100, 99}}) {
    const auto [h, w] = Resize(256).output_size(height, width);
    CHECK(std::vector<int64_t>{h, w} ==
          golden.param("resize256_" + std::to_string(height) + "x" + std::to_string(width)));
  }
}

TEST_CASE("transforms: partial decoding gives the same sample as decoding everything first") {
  const ImageGolden& golden = ImageGolden::get();
  const Compose train({std::make_shared<RandomResizedCrop>(224), std::make_shared<RandomHorizontalFlip>()},
                      Normalize(kMean, kStd));
  for (const std::string name : {"photo420.jpg", "progressive.jpg", "cmyk.jpg", "photo.png"}) {
    CAPTURE(name);
    const auto bytes = read_image_bytes(golden.file(name));
    for (uint64_t seed = 0; seed < 8; ++seed) {
      SampleRandom a(seed), b(seed);
      const torch::Tensor partial = train.decode(data_of(bytes), bytes.size(), name, a);
      const torch::Tensor whole = train(decode_image_rgb(data_of(bytes), bytes.size(), name), b);
      CHECK(partial.sizes() == torch::IntArrayRef({3, 224, 224}));
      CHECK(torch::equal(partial, whole));
    }
  }
}

TEST_CASE("ImageDataset: augmentation depends on (seed, epoch, index), not on loader threads") {
  const ImageGolden& golden = ImageGolden::get();
  TempDir dir("transformed-folder");
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(dir / cls);
    for (const char* name : {"photo420.jpg", "photo444.jpg", "progressive.jpg", "photo.png", "rgb.png"}) {
      fs::copy_file(golden.file(name), dir / cls / name);
    }
  }
  auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir.path()));
  auto pipeline = std::make_shared<const Compose>(
      std::vector<std::shared_ptr<const Transform>>{std::make_shared<RandomResizedCrop>(64),
                                                     std::make_shared<RandomHorizontalFlip>()},
      Normalize(kMean, kStd));
  auto dataset = std::make_shared<const ImageDataset>(source, pipeline, 42);
  // One loader per worker count; the epoch comes from set_epoch, as the Trainer sets it.
  auto epoch_batches = [&](DatasetLoader& loader, int64_t epoch) {
    loader.set_epoch(epoch);
    auto it = loader.iterate();
    std::vector<torch::Tensor> inputs;
    while (auto batch = it->next()) inputs.push_back(batch->input);
    return torch::cat(inputs);
  };
  DatasetLoader serial_loader(dataset, DatasetLoaderOptions(3).num_workers(0).seed(5));
  DatasetLoader threaded_loader(dataset, DatasetLoaderOptions(3).num_workers(3).persistent_workers(true).seed(5));
  const torch::Tensor serial = epoch_batches(serial_loader, 0);
  CHECK(serial.sizes() == torch::IntArrayRef({10, 3, 64, 64}));
  CHECK(torch::equal(serial, epoch_batches(threaded_loader, 0)));
  const torch::Tensor epoch1 = epoch_batches(serial_loader, 1);
  CHECK_FALSE(torch::equal(serial, epoch1));
  CHECK(torch::equal(epoch1, epoch_batches(threaded_loader, 1)));
  CHECK(torch::equal(serial, epoch_batches(threaded_loader, 0)));
  // Sample i alone, with its own seed, is what the loader produced.
  CHECK(torch::equal(dataset->get(7).input, serial[7]));
  CHECK(torch::equal(dataset->at_epoch(1)->get(7).input, epoch1[7]));
}

}  // namespace image_transforms_test
