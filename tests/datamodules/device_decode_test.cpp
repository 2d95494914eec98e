// Decoding on the device (decode: gpu | auto) exercised on the CPU: the
// same nvImageCodec batching, regions, fallbacks and errors as on a GPU, run
// by nvImageCodec's CPU backend and LibTorch's CPU kernels, against the CPU
// pipeline (ImageDataset) on real JPEGs and PNGs.
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/imagenet.hpp>
#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>
#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/codecs/image_tensor.hpp>
#include <fulgur/datamodules/images/codecs/nvimgcodec_decoder.hpp>
#include <fulgur/datamodules/images/device_decode_dataset.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <doctest/doctest.h>

#include "support/image_golden.hpp"
#include "support/image_tree.hpp"
#include "support/test_support.hpp"
#include "support/write_jpeg.hpp"

#include <filesystem>
#include <functional>
#include <iostream>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

namespace device_decode_test {

namespace fs = std::filesystem;
using namespace fulgur;
using fulgur::testing::ImageGolden;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

std::string bytes_of(const fs::path& path) { return fulgur::testing::file_bytes(path); }
const uint8_t* data_of(const std::string& bytes) { return reinterpret_cast<const uint8_t*>(bytes.data()); }

/// Two classes of 500 x 375 photos in every layout the decoders meet:
/// 4:2:0, 4:4:4, progressive, grey, 4:1:1 (written with libjpeg), CMYK and
/// a PNG named .jpg.
void write_photo_folders(const fs::path& root) {
  const ImageGolden& golden = ImageGolden::get();
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  for (const char* name : {"photo420.jpg", "photo444.jpg", "progressive.jpg", "gray.jpg"}) {
    fs::copy_file(golden.file(name), root / "a" / name);
  }
  fs::copy_file(golden.file("cmyk.jpg"), root / "b" / "cmyk.jpg");
  fs::copy_file(golden.file("photo.png"), root / "b" / "really_a_png.jpg");
  const torch::Tensor photo = read_image(golden.file("photo.png"));
  fulgur::testing::write_jpeg(root / "b" / "photo411.jpg", photo, {90, 4, 1, false});
  fulgur::testing::write_jpeg(root / "b" / "photo411p.jpg", photo.flip({1}).contiguous(), {85, 4, 1, true});
}

std::shared_ptr<NvImageCodecDecoder> cpu_decoder() {
  const auto reason = NvImageCodecDecoder::unavailable_reason();
  INFO("nvImageCodec: " << reason.value_or("loads"));
  REQUIRE_FALSE(reason.has_value());  // the tests' set-up installs the wheel
  return std::make_shared<NvImageCodecDecoder>(NvImageCodecDecoder::Backend::Cpu);
}

/// Normalized [N, 3, H, W] back to 0-255 pixel values, for differences in
/// the units people read.
torch::Tensor to_pixels(const torch::Tensor& normalized) {
  const auto mean = torch::tensor({0.485, 0.456, 0.406}, torch::kFloat64).view({1, 3, 1, 1});
  const auto std = torch::tensor({0.229, 0.224, 0.225}, torch::kFloat64).view({1, 3, 1, 1});
  return (normalized.to(torch::kFloat64) * std + mean) * 255.0;
}

struct Difference {
  double mean = 0;
  double max = 0;
};

Difference difference(const torch::Tensor& a, const torch::Tensor& b) {
  const torch::Tensor d = (to_pixels(a) - to_pixels(b)).abs();
  return {d.mean().item<double>(), d.max().item<double>()};
}

}  // namespace

TEST_CASE("NvImageCodecDecoder: the CPU backend decodes a batch with regions as the CPU path does") {
  TempDir dir("nvimgcodec-batch");
  write_photo_folders(dir.path());
  auto decoder = cpu_decoder();

  struct Case {
    fs::path file;
    DecodeRequest region;
    bool decodes;
  };
  const std::vector<Case> cases = {
      {dir / "a/photo420.jpg", {}, true},
      {dir / "a/photo420.jpg", {37, 51, 120, 200, 0, 0}, true},
      {dir / "a/photo444.jpg", {0, 300, 375, 200, 0, 0}, true},  // touches the right and bottom edges
      {dir / "a/progressive.jpg", {101, 7, 64, 333, 0, 0}, true},
      {dir / "a/gray.jpg", {10, 10, 50, 50, 0, 0}, true},
      {dir / "b/photo411.jpg", {17, 33, 200, 150, 0, 0}, true},
      {dir / "b/photo411p.jpg", {0, 0, 100, 100, 0, 0}, true},
      // Left to the caller: CMYK (converted as Pillow does), a PNG.
      {dir / "b/cmyk.jpg", {}, false},
      {dir / "b/really_a_png.jpg", {}, false},
  };
  std::vector<std::string> bytes;
  for (const Case& c : cases) bytes.push_back(bytes_of(c.file));
  const std::string truncated = bytes[0].substr(0, bytes[0].size() / 2);
  const std::string garbage = "hello, I am not a JPEG at all";
  std::vector<std::vector<uint8_t>> outputs;
  std::vector<BatchDecodeItem> items;
  for (size_t i = 0; i <= cases.size() + 1; ++i) {
    const std::string& b = i < cases.size() ? bytes[i] : i == cases.size() ? truncated : garbage;
    const DecodeRequest region = i < cases.size() ? cases[i].region : DecodeRequest{};
    const int64_t pixels = region.height > 0 ? region.height * region.width : 375 * 500;
    outputs.emplace_back(static_cast<size_t>(pixels * 3), 0);
    items.push_back({data_of(b), b.size(), region, outputs.back().data()});
  }
  const std::vector<DecodeEngine> decoded = decoder->decode(items);
  REQUIRE(decoded.size() == items.size());
  CHECK_FALSE(decoder->has_hardware_decoder());
  CHECK(decoded[cases.size()] == DecodeEngine::None);      // truncated: the CPU path refuses it, so the caller must see it
  CHECK(decoded[cases.size() + 1] == DecodeEngine::None);  // not an image
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i].file.filename().string());
    REQUIRE(decoded[i] == (cases[i].decodes ? DecodeEngine::Cpu : DecodeEngine::None));
    if (!cases[i].decodes) continue;
    // fulgur's libjpeg-turbo decode of the same region, at full resolution.
    const Image expected = decode_image_rgb(data_of(bytes[i]), bytes[i].size(), cases[i].file.string(), cases[i].region);
    REQUIRE(static_cast<size_t>(expected.bytes()) == outputs[i].size());
    const torch::Tensor want = image_to_tensor(decode_image_rgb(data_of(bytes[i]), bytes[i].size(), "x", cases[i].region));
    const torch::Tensor got =
        torch::from_blob(outputs[i].data(), want.sizes(), torch::kUInt8).to(torch::kInt32);
    const torch::Tensor d = (got - want.to(torch::kInt32)).abs();
    // Both are libjpeg-turbo; chroma upsampling may round differently.
    CHECK(d.to(torch::kFloat32).mean().item<float>() <= 0.5f);
    CHECK(d.max().item<int>() <= 8);
  }
}

TEST_CASE("DeviceDecodeDataset: the CPU pipeline's crops and flips, pixels within bounds, train and eval recipes") {
  TempDir dir("device-decode-recipes");
  write_photo_folders(dir.path());
  const auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir.path()));
  REQUIRE(source->size() == 8);
  auto decoder = cpu_decoder();
  const torch::Device cpu(torch::kCPU);
  std::vector<int64_t> all(static_cast<size_t>(source->size()));
  for (int64_t i = 0; i < source->size(); ++i) all[static_cast<size_t>(i)] = i;

  SUBCASE("train: RandomResizedCrop + flip drawn from (seed, epoch, index)") {
    const ImageDataset reference(source, imagenet_train_pipeline(96), 11, 3);
    const DeviceDecodeDataset device(source, DeviceImageRecipe::train(96, kImageNetMean, kImageNetStd), decoder, cpu,
                                     11, 3);
    const Batch want = reference.get_batch(all);
    const Batch got = device.get_batch(all);
    REQUIRE(got.input.sizes() == want.input.sizes());
    CHECK(torch::equal(got.target, want.target));
    const auto recipe = DeviceImageRecipe::train(96, kImageNetMean, kImageNetStd);
    int64_t exact = 0;
    for (int64_t i = 0; i < source->size(); ++i) {
      INFO(source->name(i));
      const Difference same = difference(got.input[i].unsqueeze(0), want.input[i].unsqueeze(0));
      const Difference mirrored = difference(got.input[i].unsqueeze(0), want.input[i].flip({2}).unsqueeze(0));
      CHECK(same.mean * 10 < mirrored.mean);  // the same crop and flip, not just similar content
      // Both resize with antialiased bilinear filters (Pillow's in uint8,
      // LibTorch's in float): within a pixel value. A window of more than
      // 8/7 x twice the output on both sides is DCT-scaled by the CPU path
      // first (a different filter: noisy photos differ more there).
      SampleRandom random(sample_seed(11, 3, i));
      const DecodeRequest region = recipe.plan(375, 500, random).region;
      const auto side_too_small_to_scale = [](int64_t side) { return side * 7 + 16 < 2 * 96 * 8; };
      if (side_too_small_to_scale(region.height) || side_too_small_to_scale(region.width)) {
        ++exact;
        CHECK(same.mean <= 0.5);
        CHECK(same.max <= 2.0);
      } else {
        CHECK(same.mean <= 5.0);
        CHECK(same.max <= 64.0);
      }
    }
    CHECK(exact >= 3);
    // Another epoch draws other crops.
    const Batch next = DeviceDecodeDataset(source, DeviceImageRecipe::train(96, kImageNetMean, kImageNetStd), decoder,
                                           cpu, 11, 4)
                           .get_batch(all);
    CHECK(difference(next.input, got.input).mean > 5.0);
  }
  SUBCASE("eval: Resize(128) + CenterCrop(112)") {
    const ImageDataset reference(source, imagenet_eval_pipeline(128, 112));
    const DeviceDecodeDataset device(source, DeviceImageRecipe::eval(128, 112, kImageNetMean, kImageNetStd), decoder,
                                     cpu);
    const Batch want = reference.get_batch(all);
    const Batch got = device.get_batch(all);
    REQUIRE(got.input.sizes() == want.input.sizes());
    const Difference d = difference(got.input, want.input);
    CHECK(d.mean <= 2.0);
    CHECK(d.max <= 48.0);
    // get() is get_batch({index})'s one example.
    CHECK(torch::equal(device.get(5).input, got.input[5]));
  }
}

TEST_CASE("DeviceDecodeDataset: a bad file is ImageDataset's one error naming it; skip_bad_samples replaces it alike") {
  TempDir dir("device-decode-bad");
  write_photo_folders(dir.path());
  const std::string whole = bytes_of(dir / "a/photo444.jpg");
  fulgur::testing::write_bytes(dir / "a/photo444.jpg", whole.substr(0, whole.size() * 2 / 3));
  const auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir.path()));
  int64_t bad = -1;
  for (int64_t i = 0; i < source->size(); ++i) {
    if (source->name(i).find("photo444") != std::string::npos) bad = i;
  }
  REQUIRE(bad >= 0);
  const ImageDataset reference(source, imagenet_train_pipeline(64), 5);
  const auto device = std::make_shared<const DeviceDecodeDataset>(
      source, DeviceImageRecipe::train(64, kImageNetMean, kImageNetStd), cpu_decoder(), torch::Device(torch::kCPU), 5);
  const std::string want = error_of([&] { reference.get(bad); });
  CHECK(want.find((dir / "a/photo444.jpg").string()) != std::string::npos);
  CHECK(error_of([&] { device->get(bad); }) == want);
  CHECK(error_of([&] { device->get_batch({0, bad, 2}); }) == want);

  const auto options = DatasetLoaderOptions(3).num_workers(2).skip_bad_samples(true).seed(1);
  DatasetLoader plain(std::make_shared<const ImageDataset>(source, imagenet_train_pipeline(64), 5), options);
  DatasetLoader on_device(device, options);
  auto a = plain.iterate();
  auto b = on_device.iterate();
  int64_t batches = 0;
  while (auto want_batch = a->next()) {
    auto got_batch = b->next();
    REQUIRE(got_batch.has_value());
    CHECK(got_batch->size() == want_batch->size());
    CHECK(torch::equal(got_batch->target, want_batch->target));
    CHECK(difference(got_batch->input, want_batch->input).mean <= 5.0);
    ++batches;
  }
  CHECK_FALSE(b->next().has_value());
  CHECK(batches == 3);
  CHECK(plain.bad_samples().count() == 1);
  CHECK(on_device.bad_samples().count() == 1);
}

TEST_CASE("DeviceDecodeDataset: engine counts per batch, epoch and run; one line per epoch; a warning for one-by-one images") {
  TempDir dir("device-decode-counts");
  write_photo_folders(dir.path());
  const auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir.path()));
  const auto device = std::make_shared<const DeviceDecodeDataset>(
      source, DeviceImageRecipe::train(64, kImageNetMean, kImageNetStd), cpu_decoder(), torch::Device(torch::kCPU), 5);
  // Class a: four JPEGs nvImageCodec's CPU backend decodes. Class b (sorted):
  // cmyk.jpg and really_a_png.jpg go one by one through fulgur's CPU path.
  const DeviceDecodeDataset::DecodedBatch a = device->decode_batch({0, 1, 2, 3});
  CHECK(a.counts == DecodeCounts{0, 0, 4, 0});
  CHECK(a.batch.size() == 4);
  CHECK(device->stats()->last_batch() == a.counts);

  std::ostringstream err;
  std::streambuf* previous = std::cerr.rdbuf(err.rdbuf());
  DatasetLoader loader(device, DatasetLoaderOptions(4).num_workers(0).seed(1));  // in this thread: err sees it all
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    auto it = loader.iterate();
    // As the training loop does: size() batches, never the call that finds no more.
    for (int64_t b = 0; b < loader.size(); ++b) REQUIRE(it->next().has_value());
    CHECK(err.str().find("fulgur: decode on cpu, epoch " + std::to_string(epoch) + ":") != std::string::npos);
    CHECK_FALSE(it->next().has_value());  // the line once per pass, not per call
  }
  std::cerr.rdbuf(previous);
  const std::string out = err.str();
  INFO(out);
  CHECK(device->stats()->run() == DecodeCounts{0, 0, 20, 4});  // the batch above and two epochs
  CHECK(device->stats()->run_batches() == 5);
  // Epoch 0 also counts the batch decoded above (the dataset's own epoch is 0).
  CHECK(out.find("fulgur: decode on cpu, epoch 0: 12 images in 3 batches: hardware 0, cuda 0, cpu 12 (2 one by one)\n") !=
        std::string::npos);
  CHECK(out.find("fulgur: decode on cpu, epoch 1: 8 images in 2 batches: hardware 0, cuda 0, cpu 8 (2 one by one)\n") !=
        std::string::npos);
  for (const char* epoch : {"0", "1"}) {
    CHECK(out.find(std::string("fulgur: warning: decode on cpu, epoch ") + epoch +
                   ": 2 of 4 images of a batch decoded one by one on the CPU (not a JPEG the GPU decoders take: '" +
                   (dir / "b/cmyk.jpg").string() + "', '" + (dir / "b/really_a_png.jpg").string() + "')") !=
          std::string::npos);
  }
  size_t lines = 0;
  for (size_t at = out.find("fulgur: "); at != std::string::npos; at = out.find("fulgur: ", at + 1)) ++lines;
  CHECK(lines == 4);

  // With workers the line comes with the last batch too.
  std::ostringstream pooled_err;
  previous = std::cerr.rdbuf(pooled_err.rdbuf());
  DatasetLoader pooled(device, DatasetLoaderOptions(4).num_workers(2).seed(1));
  pooled.set_epoch(2);
  auto it = pooled.iterate();
  for (int64_t b = 0; b < pooled.size(); ++b) REQUIRE(it->next().has_value());
  std::cerr.rdbuf(previous);
  CHECK(pooled_err.str().find("fulgur: decode on cpu, epoch 2: 8 images in 2 batches") != std::string::npos);
}

TEST_CASE("ImageNet decode auto says its one line with a pipeline set from C++ too") {
  TempDir dir("imagenet-decode-custom");
  fulgur::testing::write_class_folders(dir / "train", {"n01", "n02"}, 2, 0);
  fulgur::testing::write_class_folders(dir / "val", {"n01", "n02"}, 1, 9);
  ImageNet custom(ImageNetOptions(dir.path().string())
                      .batch_size(2)
                      .num_workers(0)
                      .seed(1)
                      .crop_size(16)
                      .resize_size(16)
                      .train_pipeline(imagenet_train_pipeline(16)));
  custom.setup(Stage::Fit);
  auto loader = std::dynamic_pointer_cast<DatasetLoader>(custom.train_dataloader());
  REQUIRE(loader);
  std::ostringstream err;
  std::streambuf* previous = std::cerr.rdbuf(err.rdbuf());
  loader->set_device(torch::Device(torch::kCPU));
  std::cerr.rdbuf(previous);
  CHECK(err.str() == "fulgur: decode auto: decoding JPEGs on the CPU: a train_pipeline or val_pipeline set from C++ "
                     "runs on the CPU\n");
  CHECK(std::dynamic_pointer_cast<const ImageDataset>(loader->dataset()) != nullptr);
}

TEST_CASE("ImageNet decode option: auto stays on the CPU, gpu refuses a CPU run, custom pipelines, YAML") {
  TempDir dir("imagenet-decode");
  fulgur::testing::write_class_folders(dir / "train", {"n01", "n02"}, 2, 0);
  fulgur::testing::write_class_folders(dir / "val", {"n01", "n02"}, 1, 9);
  auto options = ImageNetOptions(dir.path().string()).batch_size(2).num_workers(0).seed(1).crop_size(16).resize_size(16);
  CHECK(options.decode() == DecodeMode::Auto);

  ImageNet automatic(options);
  automatic.setup(Stage::Fit);
  auto loader = std::dynamic_pointer_cast<DatasetLoader>(automatic.train_dataloader());
  REQUIRE(loader);
  loader->set_device(torch::Device(torch::kCPU));
  CHECK(std::dynamic_pointer_cast<const ImageDataset>(loader->dataset()) != nullptr);
  CHECK(loader->iterate()->next()->input.sizes() == torch::IntArrayRef{2, 3, 16, 16});

  ImageNet gpu(ImageNetOptions(options).decode(DecodeMode::Gpu));
  gpu.setup(Stage::Fit);
  auto gpu_loader = gpu.train_dataloader();
  CHECK(error_of([&] { gpu_loader->set_device(torch::Device(torch::kCPU)); })
            .find("[ImageDataset] decode gpu: cannot decode on the GPU: the run's device is cpu") == 0);

  CHECK(error_of([&] { ImageNet(ImageNetOptions(options).decode(DecodeMode::Gpu).train_pipeline(imagenet_train_pipeline(16))); })
            .find("[ImageNetOptions] decode gpu runs torchvision's ImageNet recipe on the device") == 0);

  fulgur::cli::ConfigSection section(YAML::Load("{root: /d, decode: gpus}"), "data");
  CHECK(error_of([&] { fulgur::cli::read_options<ImageNetOptions>(section); }).find("data.decode: must be one of cpu, gpu, auto, got 'gpus'") == 0);
  fulgur::cli::ConfigSection good(YAML::Load("{root: /d, decode: cpu}"), "data");
  CHECK(fulgur::cli::read_options<ImageNetOptions>(good).decode() == DecodeMode::Cpu);
}

}  // namespace device_decode_test
