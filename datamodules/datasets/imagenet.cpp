#include <fulgur/datamodules/datasets/imagenet.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>
#include <fulgur/datamodules/images/hdf5_image_file.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <stdexcept>

namespace fulgur {

namespace {

namespace fs = std::filesystem;

bool path_exists(const fs::path& path) {
  std::error_code ignored;
  return fs::exists(path, ignored);
}

}  // namespace

ImageNet::ImageNet(ImageNetOptions options) : ImageDataModule("ImageNet", std::move(options)) {
  options_.validate();
  if (options_.resize_size() < options_.crop_size()) {
    throw std::invalid_argument("[ImageNetOptions] resize_size must be >= crop_size (" +
                                std::to_string(options_.crop_size()) + "), got " +
                                std::to_string(options_.resize_size()));
  }
  custom_pipelines_ = options_.train_pipeline() || options_.val_pipeline();
  if (custom_pipelines_ && options_.decode() == DecodeMode::Gpu) {
    throw std::invalid_argument(
        "[ImageNetOptions] decode gpu runs torchvision's ImageNet recipe on the device; a train_pipeline or "
        "val_pipeline set from C++ runs on the CPU: use decode cpu");
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

std::shared_ptr<const EncodedImageSource> ImageNet::load(const std::string& split,
                                                         const std::vector<std::string>& classes) const {
  const fs::path root = options_.root();
  const std::string where = "[ImageNet::setup] ";
  if (options_.format() == ImageNetFormat::HDF5) {
    auto pack = std::make_shared<const HDF5ImageFile>(root / (split + ".h5"));
    if (!classes.empty() && pack->classes() != classes) {
      throw DataError(where + "'" + pack->path().string() + "' has different classes than the training split");
    }
    return pack;
  }
  if (options_.format() == ImageNetFormat::Index) {
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

DeviceDecode ImageNet::device_decode(bool training) const {
  if (options_.decode() == DecodeMode::Cpu) return {};
  if (custom_pipelines_) {
    // gpu refused them at construction; auto still says its one line.
    return {options_.decode(), std::nullopt, 0, "a train_pipeline or val_pipeline set from C++ runs on the CPU"};
  }
  const auto& o = options_;
  return {o.decode(),
          training && o.augment() ? DeviceImageRecipe::train(o.crop_size(), o.mean(), o.std())
                                  : DeviceImageRecipe::eval(o.resize_size(), o.crop_size(), o.mean(), o.std()),
          o.batch_size(), ""};
}

std::shared_ptr<const ImageDataset> ImageNet::dataset(Stage stage, uint64_t seed) const {
  // The augmentation draws from (seed, epoch, index); the Trainer's set_epoch
  // selects the epoch (ImageDataset::at_epoch).
  if (stage == Stage::Fit) {
    return train_ ? std::make_shared<const ImageDataset>(train_, options_.train_pipeline(), seed, 0, device_decode(true))
                  : nullptr;
  }
  return val_ ? std::make_shared<const ImageDataset>(val_, options_.val_pipeline(), 0, 0, device_decode(false)) : nullptr;
}

}  // namespace fulgur
