// The ImageNet DataModule on small trees of real PNG files in every layout
// it reads: class folders, flat val/ with LOC_val_solution.csv, index files
// and HDF5 packs.
#include "support/image_tree.hpp"
#include "support/test_support.hpp"
#include "support/write_png.hpp"

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/imagenet.hpp>
#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>
#include <fulgur/datamodules/images/hdf5_image_file.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/images/transforms/transform.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/trainer/cli/config_error.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <fstream>
#include <functional>

namespace imagenet_test {

using fulgur::DataError;
using fulgur::ImageNet;
using fulgur::ImageNetFormat;
using fulgur::ImageNetOptions;
using fulgur::Stage;
using fulgur::testing::error_of;
using fulgur::testing::TempDir;

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kWnids = {"n01440764", "n01443537", "n01484850"};

/// root/train/<wnid>/ (4 each) and root/val/<wnid>/ (2 each).
void write_imagenet(const fs::path& root) {
  fulgur::testing::write_class_folders(root / "train", kWnids, 4, 0);
  fulgur::testing::write_class_folders(root / "val", kWnids, 2, 500);
}

std::vector<fulgur::Batch> epoch(fulgur::DataLoader& loader, int64_t number) {
  loader.set_epoch(number);
  std::vector<fulgur::Batch> out;
  auto it = loader.iterate();
  while (auto batch = it->next()) out.push_back(std::move(*batch));
  return out;
}

bool same(const std::vector<fulgur::Batch>& a, const std::vector<fulgur::Batch>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i].input, b[i].input) || !torch::equal(a[i].target, b[i].target)) return false;
  }
  return true;
}

/// Crops of the test images' own size (16): the validation recipe (Resize +
/// CenterCrop) leaves them as they are.
ImageNetOptions options(const fs::path& root) {
  return ImageNetOptions(root.string())
      .batch_size(4)
      .num_workers(2)
      .seed(3)
      .persistent_workers(false)
      .crop_size(16)
      .resize_size(16);
}

/// What `pipeline` makes of image `index` of `source` for (seed, epoch).
torch::Tensor through(const fulgur::Compose& pipeline, const fulgur::EncodedImageSource& source, int64_t index,
                      uint64_t seed, int64_t epoch) {
  const std::string bytes = source.read(index);
  fulgur::SampleRandom random(fulgur::sample_seed(seed, epoch, index));
  return pipeline.decode(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), source.name(index), random);
}

}  // namespace

TEST_CASE("ImageNet: class folders give sorted wnids, labels and loader sizes") {
  TempDir dir("imagenet-folders");
  write_imagenet(dir.path());
  ImageNet data(options(dir.path()));
  data.setup(Stage::Fit);
  CHECK(data.classes() == kWnids);
  CHECK(data.train_source()->size() == 12);
  CHECK(data.val_source()->size() == 6);
  CHECK(data.train_dataloader()->size() == 3);
  CHECK(data.val_dataloader()->size() == 2);
  const auto val = epoch(*data.val_dataloader(), 0);
  CHECK(val[0].input.sizes() == torch::IntArrayRef({4, 3, 16, 16}));
  CHECK(val[0].target[0].item<int64_t>() == 0);
  CHECK(val[1].target[1].item<int64_t>() == 2);
  // Normalised with ImageNet's statistics: pixel 0 of the red channel.
  const auto image = fulgur::testing::class_image(0, 500);
  CHECK(val[0].input[0][0][0][0].item<float>() ==
        doctest::Approx((image[0][0][0].item<int64_t>() / 255.0 - 0.485) / 0.229).epsilon(1e-5));
}

TEST_CASE("ImageNet: training augmentation is fixed by (seed, epoch, index), not by num_workers") {
  TempDir dir("imagenet-augment");
  write_imagenet(dir.path());
  auto loaders = [&](int64_t workers, bool persistent) {
    ImageNet data(options(dir.path()).num_workers(workers).persistent_workers(persistent));
    data.setup(Stage::Fit);
    return data.train_dataloader();
  };
  auto serial = loaders(0, false);
  auto threaded = loaders(3, true);
  const auto e0 = epoch(*serial, 0);
  const auto e1 = epoch(*serial, 1);
  CHECK(same(e0, epoch(*threaded, 0)));
  CHECK(same(e1, epoch(*threaded, 1)));
  CHECK_FALSE(same(e0, e1));
  // Without augment and shuffle, training batches are the plain normalised images.
  ImageNet plain(options(dir.path()).augment(false).shuffle(false));
  plain.setup(Stage::Fit);
  const auto batches = epoch(*plain.train_dataloader(), 0);
  CHECK(batches[0].target[3].item<int64_t>() == 0);
  CHECK(batches[1].target[0].item<int64_t>() == 1);
}

TEST_CASE("ImageNet: default recipe: RandomResizedCrop + flip to train, Resize + CenterCrop to validate") {
  TempDir dir("imagenet-recipe");
  fulgur::testing::write_class_folders(dir / "train", kWnids, 4, 0, /*side=*/20);
  fulgur::testing::write_class_folders(dir / "val", kWnids, 2, 500, /*side=*/20);

  // The defaults are torchvision's sizes: every loader gives [B, 3, 224, 224].
  const auto defaults = ImageNetOptions(dir.path().string()).batch_size(4).num_workers(0).seed(3);
  CHECK(defaults.crop_size() == 224);
  CHECK(defaults.resize_size() == 256);
  ImageNet full(defaults);
  full.setup(Stage::Fit);
  CHECK(epoch(*full.train_dataloader(), 0)[0].input.sizes() == torch::IntArrayRef({4, 3, 224, 224}));
  CHECK(epoch(*full.val_dataloader(), 0)[0].input.sizes() == torch::IntArrayRef({4, 3, 224, 224}));

  const auto small = options(dir.path()).crop_size(12).resize_size(14).shuffle(false);
  ImageNet data(small);
  data.setup(Stage::Fit);
  const auto train = epoch(*data.train_dataloader(), 1);
  const auto val = epoch(*data.val_dataloader(), 0);
  REQUIRE(train.size() == 3);
  REQUIRE(val.size() == 2);
  CHECK(train[2].input.sizes() == torch::IntArrayRef({4, 3, 12, 12}));
  CHECK(val[1].input.sizes() == torch::IntArrayRef({2, 3, 12, 12}));
  const auto train_recipe = fulgur::imagenet_train_pipeline(12);
  const auto val_recipe = fulgur::imagenet_eval_pipeline(14, 12);
  for (int64_t i = 0; i < 4; ++i) {
    CAPTURE(i);
    // Sample i's crop and flip come from its own generator, seeded by (seed, epoch, index).
    CHECK(torch::equal(train[1].input[i], through(*train_recipe, *data.train_source(), 4 + i, 3, 1)));
    CHECK(torch::equal(val[0].input[i], through(*val_recipe, *data.val_source(), i, 0, 0)));
  }
  CHECK_FALSE(torch::equal(train[1].input[0], through(*val_recipe, *data.train_source(), 4, 3, 1)));

  // Without augment, training images get the validation recipe (one shape per batch).
  ImageNet plain(ImageNetOptions(small).augment(false));
  plain.setup(Stage::Fit);
  const auto plain_train = epoch(*plain.train_dataloader(), 1);
  CHECK(plain_train[0].input.sizes() == torch::IntArrayRef({4, 3, 12, 12}));
  CHECK(torch::equal(plain_train[2].input[3], through(*val_recipe, *plain.train_source(), 11, 3, 1)));
}

TEST_CASE("ImageNet: flat val/ labelled by LOC_val_solution.csv") {
  TempDir dir("imagenet-flat-val");
  fulgur::testing::write_class_folders(dir / "train", kWnids, 2, 0);
  fs::create_directories(dir / "val");
  std::ofstream csv(dir / "LOC_val_solution.csv");
  csv << "ImageId,PredictionString\n";
  for (int64_t i = 0; i < 5; ++i) {
    const std::string id = fmt::format("ILSVRC2012_val_0000000{}", i + 1);
    fulgur::testing::write_png(dir / "val" / (id + ".png"), fulgur::testing::class_image(i % 3, i));
    csv << id << "," << kWnids[static_cast<size_t>(i % 3)] << " 1 2 3 4 " << kWnids[static_cast<size_t>(i % 3)]
        << " 5 6 7 8\n";
  }
  csv.close();
  ImageNet data(options(dir.path()).num_workers(0));
  data.setup(Stage::Validate);
  REQUIRE(data.val_source()->size() == 5);
  for (int64_t i = 0; i < 5; ++i) CHECK(data.val_source()->label(i) == i % 3);
  // A row naming an unknown class, and an image without a row.
  std::ofstream(dir / "LOC_val_solution.csv", std::ios::app) << "ILSVRC2012_val_00000009,n99999999 1 2 3 4\n";
  CHECK(error_of([&] { ImageNet(options(dir.path())).setup(Stage::Validate); }) ==
        "[ImageFileList::from_val_solution] '" + (dir / "LOC_val_solution.csv").string() +
            "' line 7: class 'n99999999' is not one of the training classes");
}

TEST_CASE("ImageNet: index files `path,label` relative to root") {
  TempDir dir("imagenet-index");
  write_imagenet(dir.path());
  std::ofstream train(dir / "train.csv");
  train << "path,label\n";
  for (size_t c = 0; c < 3; ++c) train << "train/" << kWnids[c] << "/img_0.png," << c << "\n";
  train.close();
  std::ofstream(dir / "val.csv") << "val/" << kWnids[2] << "/img_1.png,2\n\n" << (dir / "val" / kWnids[0] / "img_0.png").string() << ",0\n";
  ImageNet data(options(dir.path()).format(ImageNetFormat::Index));
  data.setup(Stage::Fit);
  CHECK(data.classes() == std::vector<std::string>{"0", "1", "2"});
  CHECK(data.train_source()->size() == 3);
  CHECK(data.val_source()->size() == 2);
  CHECK(data.val_source()->label(0) == 2);
  CHECK(epoch(*data.val_dataloader(), 0).size() == 1);
  std::ofstream(dir / "val.csv") << "val/a.png,2\nval/b.png,x\n";
  CHECK(error_of([&] { ImageNet(options(dir.path()).format(ImageNetFormat::Index)).setup(Stage::Fit); }) ==
        "[ImageFileList::from_index_file] '" + (dir / "val.csv").string() +
            "' line 2: expected 'path,label' with an integer label >= 0, got 'val/b.png,x'");
}

#ifdef FULGUR_WITH_HDF5
TEST_CASE("ImageNet: HDF5 packs give the same batches as the folders they were packed from") {
  TempDir dir("imagenet-hdf5");
  write_imagenet(dir / "folders");
  ImageNet folders(options(dir / "folders"));
  folders.setup(Stage::Fit);
  fs::create_directories(dir / "packs");
  fulgur::HDF5ImageFile::write(*folders.train_source(), dir / "packs" / "train.h5");
  fulgur::HDF5ImageFile::write(*folders.val_source(), dir / "packs" / "val.h5");
  ImageNet packs(options(dir / "packs").format(ImageNetFormat::HDF5));
  packs.setup(Stage::Fit);
  CHECK(packs.classes() == kWnids);
  CHECK(same(epoch(*packs.train_dataloader(), 2), epoch(*folders.train_dataloader(), 2)));
  CHECK(same(epoch(*packs.val_dataloader(), 0), epoch(*folders.val_dataloader(), 0)));
}
#else
TEST_CASE("ImageNet: format hdf5 in a build without HDF5 is one error naming the pack") {
  TempDir dir("imagenet-no-hdf5");
  write_imagenet(dir.path());
  CHECK(error_of([&] { ImageNet(options(dir.path()).format(ImageNetFormat::HDF5)).setup(Stage::Fit); }) ==
        "[HDF5ImageFile] '" + (dir / "train.h5").string() +
            "': fulgur was built without HDF5 (FULGUR_WITH_HDF5=OFF), so it cannot read or write HDF5 image packs; "
            "rebuild with libhdf5 installed (Debian: libhdf5-dev) and -DFULGUR_WITH_HDF5=ON");
  CHECK_THROWS_AS(fulgur::HDF5ImageFile::write(fulgur::ImageFileList::from_class_folders(dir / "train"), dir / "out.h5"),
                  DataError);
  CHECK_FALSE(fs::exists(dir / "out.h5"));
}
#endif

TEST_CASE("ImageNet: bad PNGs stop the epoch naming the file, or are skipped once each with skip_bad_samples") {
  TempDir dir("imagenet-bad");
  write_imagenet(dir.path());
  const auto train = dir / "train";
  fulgur::testing::damage_pngs(train / kWnids[0] / "img_1.png", train / kWnids[1] / "img_2.png",
                               train / kWnids[2] / "img_3.png");
  ImageNet strict(options(dir.path()).shuffle(false));
  strict.setup(Stage::Fit);
  CHECK(error_of([&] { epoch(*strict.train_dataloader(), 0); })
            .find(fmt::format("'{}': empty file (0 bytes)", (train / kWnids[0] / "img_1.png").string())) != std::string::npos);

  ImageNet lenient(options(dir.path()).skip_bad_samples(true));
  lenient.setup(Stage::Fit);
  auto loader = lenient.train_dataloader();
  for (int64_t e = 0; e < 3; ++e) {
    const auto batches = epoch(*loader, e);
    CHECK(batches.size() == 3);
    for (const auto& batch : batches) CHECK(batch.size() == 4);
  }
  CHECK(lenient.skipped_train_samples() == 3);
  CHECK(lenient.skipped_val_samples() == 0);
}

TEST_CASE("ImageNet: a missing split and invalid options are clear errors") {
  TempDir dir("imagenet-missing");
  fulgur::testing::write_class_folders(dir / "train", kWnids, 1);
  CHECK(error_of([&] { ImageNet(options(dir.path())).setup(Stage::Fit); }) ==
        "[ImageNet::setup] split folder '" + (dir / "val").string() +
            "' does not exist; expected root/train/<wnid>/ and root/val/");
  CHECK_THROWS_AS(ImageNet(options(dir.path())).setup(Stage::Fit), DataError);
  CHECK(error_of([] { fulgur::parse_choice<ImageNetFormat>("lmdb"); }) ==
        "must be one of folder, hdf5, index, got 'lmdb'");
  CHECK(error_of([&] { ImageNet(options(dir.path()).crop_size(32)); }) ==
        "[ImageNetOptions] resize_size must be >= crop_size (32), got 16");
  CHECK(error_of([&] { ImageNet(options(dir.path()).crop_size(0)); }) == "[ImageNetOptions] crop_size must be >= 1, got 0");
  CHECK(error_of([&] { ImageNet(options(dir.path()).mean({0.5})); }) ==
        "[ImageNetOptions] mean must be a list of 3 numbers (one per RGB channel), got [0.5]");
  CHECK(error_of([] { ImageNet{ImageNetOptions{}}; }) ==
        "[ImageNetOptions] root must be given (it has no default), got \"\"");
  CHECK_THROWS_AS(ImageNet(options(dir.path()).format(ImageNetFormat::HDF5)).setup(Stage::Fit), DataError);
}

TEST_CASE("ImageNetOptions from YAML: the example config's keys, and errors naming the dotted key") {
  fulgur::cli::ConfigSection example(
      YAML::LoadFile(std::string(FULGUR_SOURCE_DIR) + "/examples/imagenet/config.yaml")["data"], "data");
  const auto read = fulgur::cli::read_options<ImageNet::Options>(example);
  CHECK(read.root() == "/data/imagenet");
  CHECK(read.format() == ImageNetFormat::Folder);
  CHECK(read.batch_size() == 256);
  CHECK(read.crop_size() == 224);
  CHECK(read.resize_size() == 256);
  CHECK_FALSE(read.seed().has_value());

  const auto error_of_yaml = [](const std::string& yaml) -> std::string {
    fulgur::cli::ConfigSection section(YAML::Load(yaml), "data");
    try {
      fulgur::cli::read_options<ImageNetOptions>(section);
    } catch (const fulgur::cli::ConfigError& e) {
      return e.what();
    }
    return "<no ConfigError>";
  };
  CHECK(error_of_yaml("{root: /d, format: lmdb}") == "data.format: must be one of folder, hdf5, index, got 'lmdb'");
  CHECK(error_of_yaml("{root: /d, crop_size: 0}") == "data.crop_size: must be >= 1, got 0");
  CHECK(error_of_yaml("{root: /d, std: [1, 1, 0]}") ==
        "data.std: must be a list of 3 positive numbers (one per RGB channel), got [1, 1, 0]");
  CHECK(error_of_yaml("{root: /d, seed: -3}") == "data.seed: must be >= 0, got -3");
  CHECK(error_of_yaml("{root: /d, train_pipeline: x}") == "unknown key 'data.train_pipeline'");
}

}  // namespace imagenet_test
