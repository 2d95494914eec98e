#include <fulgur/datamodules/imagenet.hpp>

#include <fulgur/datamodules/composed_image_dataset.hpp>
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/default_num_workers.hpp>
#include <fulgur/datamodules/dataset_loader.hpp>
#include <fulgur/datamodules/hdf5_image_file.hpp>
#include <fulgur/datamodules/image_file_list.hpp>
#include <fulgur/datamodules/imagenet_pipelines.hpp>
#include <fulgur/trainer/cli/config_section.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <functional>
#include <stdexcept>

namespace fulgur {

namespace {

namespace fs = std::filesystem;

bool valid_stats(const std::vector<double>& values, bool positive) {
  bool ok = values.size() == 3;
  for (const double v : values) ok = ok && std::isfinite(v) && (!positive || v > 0);
  return ok;
}

bool path_exists(const fs::path& path) {
  std::error_code ignored;
  return fs::exists(path, ignored);
}

}  // namespace

ImageNetOptions ImageNetOptions::from_config(cli::ConfigSection& section) {
  ImageNetOptions o;
  o.root(section.get<std::string>("root", ""));
  if (o.root().empty()) section.fail("root", "a non-empty path to the ImageNet folder", "");
  o.format(section.get<std::string>("format", o.format()));
  if (o.format() != "folder" && o.format() != "hdf5" && o.format() != "index") {
    section.fail("format", "one of folder, hdf5, index", o.format());
  }
  o.batch_size(section.get<int64_t>("batch_size", o.batch_size()));
  if (o.batch_size() < 1) section.fail("batch_size", "an integer >= 1", std::to_string(o.batch_size()));
  o.num_workers(section.get<int64_t>("num_workers", default_num_workers(o.num_workers())));
  if (o.num_workers() < 0) section.fail("num_workers", "an integer >= 0", std::to_string(o.num_workers()));
  o.augment(section.get<bool>("augment", o.augment()));
  o.shuffle(section.get<bool>("shuffle", o.shuffle()));
  o.persistent_workers(section.get<bool>("persistent_workers", o.persistent_workers()));
  o.pin_memory(section.get<bool>("pin_memory", o.pin_memory()));
  o.skip_bad_samples(section.get<bool>("skip_bad_samples", o.skip_bad_samples()));
  o.mean(section.get<std::vector<double>>("mean", o.mean()));
  if (!valid_stats(o.mean(), false)) section.fail("mean", "a list of 3 numbers (one per RGB channel)", "");
  o.std(section.get<std::vector<double>>("std", o.std()));
  if (!valid_stats(o.std(), true)) section.fail("std", "a list of 3 positive numbers (one per RGB channel)", "");
  o.crop_size(section.get<int64_t>("crop_size", o.crop_size()));
  if (o.crop_size() < 1) section.fail("crop_size", "an integer >= 1", std::to_string(o.crop_size()));
  o.resize_size(section.get<int64_t>("resize_size", o.resize_size()));
  if (o.resize_size() < o.crop_size()) {
    section.fail("resize_size", "an integer >= crop_size (" + std::to_string(o.crop_size()) + ")",
                 std::to_string(o.resize_size()));
  }
  const YAML::Node seed = section.raw("seed", YAML::Node());
  if (seed && !seed.IsNull()) {
    int64_t value = -1;
    try {
      value = seed.as<int64_t>();
    } catch (const YAML::Exception&) {
      section.fail("seed", "a non-negative integer or null", YAML::Dump(seed));
    }
    if (value < 0) section.fail("seed", "a non-negative integer or null", YAML::Dump(seed));
    o.seed(static_cast<uint64_t>(value));
  }
  return o;
}

ImageNet::ImageNet(ImageNetOptions options) : options_(std::move(options)) {
  const std::string where = "[ImageNet::ImageNet] ";
  if (options_.root().empty()) throw std::invalid_argument(where + "root is empty; expected the ImageNet folder");
  if (options_.format() != "folder" && options_.format() != "hdf5" && options_.format() != "index") {
    throw std::invalid_argument(where + "format must be folder, hdf5 or index, got '" + options_.format() + "'");
  }
  if (options_.batch_size() < 1) {
    throw std::invalid_argument(where + "batch_size must be >= 1, got " + std::to_string(options_.batch_size()));
  }
  if (options_.num_workers() < 0) {
    throw std::invalid_argument(where + "num_workers must be >= 0, got " + std::to_string(options_.num_workers()));
  }
  if (!valid_stats(options_.mean(), false) || !valid_stats(options_.std(), true)) {
    throw std::invalid_argument(where + "mean and std must be 3 numbers each (std positive)");
  }
  if (options_.crop_size() < 1 || options_.resize_size() < options_.crop_size()) {
    throw std::invalid_argument(where + "expected 1 <= crop_size <= resize_size, got crop_size " +
                                std::to_string(options_.crop_size()) + " and resize_size " +
                                std::to_string(options_.resize_size()));
  }
  if (!options_.val_pipeline()) {
    options_.val_pipeline(
        imagenet_eval_pipeline(options_.resize_size(), options_.crop_size(), options_.mean(), options_.std()));
  }
  if (!options_.train_pipeline()) {
    options_.train_pipeline(
        options_.augment()
            ? imagenet_train_pipeline(options_.crop_size(), options_.mean(), options_.std())
            : imagenet_eval_pipeline(options_.resize_size(), options_.crop_size(), options_.mean(), options_.std()));
  }
}

ImageNet::ImageNet(cli::ConfigSection& section) : ImageNet(ImageNetOptions::from_config(section)) {}

std::shared_ptr<const EncodedImageSource> ImageNet::load(const std::string& split,
                                                         const std::vector<std::string>& classes) const {
  const fs::path root = options_.root();
  const std::string where = "[ImageNet::setup] ";
  if (options_.format() == "hdf5") {
    auto pack = std::make_shared<const HDF5ImageFile>(root / (split + ".h5"));
    if (!classes.empty() && pack->classes() != classes) {
      throw DataError(where + "'" + pack->path().string() + "' has different classes than the training split");
    }
    return pack;
  }
  if (options_.format() == "index") {
    const fs::path index = root / (split + ".csv");
    if (!path_exists(index)) throw DataError(where + "index file '" + index.string() + "' does not exist");
    return std::make_shared<const ImageFileList>(ImageFileList::from_index_file(index, root, classes));
  }
  const fs::path dir = root / split;
  if (!path_exists(dir)) {
    throw DataError(where + "split folder '" + dir.string() + "' does not exist; expected root/train/<wnid>/ and root/val/");
  }
  if (split == "val") {
    for (const fs::path& csv : {root / "LOC_val_solution.csv", dir / "LOC_val_solution.csv"}) {
      if (path_exists(csv)) return std::make_shared<const ImageFileList>(ImageFileList::from_val_solution(dir, csv, classes));
    }
  }
  auto list = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir));
  if (!classes.empty() && list->classes() != classes) {
    throw DataError(where + "the class folders of '" + dir.string() + "' differ from the training split's");
  }
  return list;
}

void ImageNet::setup(Stage stage) {
  // Labels always come from the training split, even for validation only.
  train_ = load("train", {});
  classes_ = train_->classes();
  val_ = load("val", classes_);
  if (stage != Stage::Fit) train_ = nullptr;
}

const std::vector<std::string>& ImageNet::classes() const {
  if (classes_.empty()) throw std::logic_error("[ImageNet::classes] call setup() first");
  return classes_;
}

std::shared_ptr<DataLoader> ImageNet::train_dataloader() {
  if (!train_) throw std::logic_error("[ImageNet::train_dataloader] the train split is not set up; call setup(Stage::Fit)");
  uint64_t seed = 0;
  if (options_.seed()) {
    seed = *options_.seed();
  } else {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    seed = generator.get<at::CPUGeneratorImpl>()->random64();
  }
  // The augmentation draws from (seed, epoch, index); the Trainer's set_epoch selects the view.
  std::function<std::shared_ptr<const Dataset>(int64_t)> epoch_view;
  if (options_.train_transform()) {
    auto dataset = std::make_shared<const EncodedImageDataset>(train_, options_.train_transform(), seed, 0);
    epoch_view = [dataset](int64_t epoch) { return dataset->at_epoch(epoch); };
  } else {
    auto dataset = std::make_shared<const ComposedImageDataset>(train_, options_.train_pipeline(), seed, 0);
    epoch_view = [dataset](int64_t epoch) { return dataset->at_epoch(epoch); };
  }
  auto loader = std::make_shared<DatasetLoader>(epoch_view(0), DatasetLoaderOptions(options_.batch_size())
                                                                    .shuffle(options_.shuffle())
                                                                    .num_workers(options_.num_workers())
                                                                    .persistent_workers(options_.persistent_workers())
                                                                    .pin_memory(options_.pin_memory())
                                                                    .skip_bad_samples(options_.skip_bad_samples())
                                                                    .seed(seed));
  loader->share_bad_samples(train_bad_);
  loader->set_epoch_view(std::move(epoch_view));
  return loader;
}

std::shared_ptr<DataLoader> ImageNet::val_dataloader() {
  if (!val_) throw std::logic_error("[ImageNet::val_dataloader] the val split is not set up; call setup() first");
  std::shared_ptr<const Dataset> dataset;
  if (options_.val_transform()) {
    dataset = std::make_shared<const EncodedImageDataset>(val_, options_.val_transform());
  } else {
    dataset = std::make_shared<const ComposedImageDataset>(val_, options_.val_pipeline());
  }
  // A fixed seed: evaluation never shuffles, and drawing one would advance
  // torch's default generator as a side effect.
  auto loader = std::make_shared<DatasetLoader>(dataset, DatasetLoaderOptions(options_.batch_size())
                                                             .num_workers(options_.num_workers())
                                                             .persistent_workers(options_.persistent_workers())
                                                             .pin_memory(options_.pin_memory())
                                                             .skip_bad_samples(options_.skip_bad_samples())
                                                             .seed(0));
  loader->share_bad_samples(val_bad_);
  return loader;
}

}  // namespace fulgur
