#pragma once

#include <fulgur/datamodules/datasets/channel_stats_check.hpp>
#include <fulgur/datamodules/images/decode_mode.hpp>
#include <fulgur/datamodules/images/image_data_module.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/encoded_image_source.hpp>
#include <fulgur/datamodules/images/transforms/compose.hpp>
#include <fulgur/datamodules/loading/bad_sample_log.hpp>
#include <fulgur/datamodules/images/image_loader_options.hpp>
#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// What ImageNet's root holds (see FULGUR_IMAGENET_OPTIONS).
enum class ImageNetFormat { Folder, HDF5, Index };
inline std::vector<std::string> option_choices(ImageNetFormat) { return {"folder", "hdf5", "index"}; }

// The fields of ImageNetOptions that a config sets: type, name, default, doc,
// check. format "folder": root/train/<wnid>/*.JPEG and root/val/ as class
// folders, or flat with LOC_val_solution.csv in root or root/val; "hdf5":
// root/train.h5 and root/val.h5 written by fulgur_pack; "index": root/train.csv
// and root/val.csv with `path,label` lines, paths relative to root. augment
// false keeps one image shape per batch by giving training images the
// validation recipe. num_workers defaults to SLURM_CPUS_PER_TASK under SLURM.
#define FULGUR_IMAGENET_OPTIONS(X)                                                                               \
  X(std::string, root, "", "the dataset folder; what it holds depends on format", check::NotEmpty{})             \
  X(ImageNetFormat, format, ImageNetFormat::Folder, "layout of root: class folders, HDF5 packs or csv index files", \
    check::Any{})                                                                                                \
  X(bool, augment, true, "RandomResizedCrop + horizontal flip of training images; false: the val recipe",        \
    check::Any{})                                                                                                \
  X(std::vector<double>, mean, (std::vector<double>{0.485, 0.456, 0.406}), "per-channel mean (RGB)",             \
    check::ChannelStats{})                                                                                       \
  X(std::vector<double>, std, (std::vector<double>{0.229, 0.224, 0.225}), "per-channel std (RGB)",               \
    check::ChannelStats{true})                                                                                   \
  X(int64_t, crop_size, 224, "side of the square images of every batch", check::AtLeast{1})                      \
  X(int64_t, resize_size, 256, "shorter side after the evaluation Resize, before the CenterCrop (>= crop_size)", \
    check::Any{})                                                                                                \
  X(DecodeMode, decode, DecodeMode::Auto,                                                                        \
    "where JPEGs are decoded: gpu (nvImageCodec on the run's CUDA device), cpu (loader threads), auto",         \
    check::Any{})                                                                                                \
  FULGUR_IMAGE_LOADER_OPTIONS(X, 256, 8, true, true)

/// Options of the ImageNet DataModule (config section `data`).
struct ImageNetOptions {
  ImageNetOptions() = default;
  explicit ImageNetOptions(std::string root) : root_(std::move(root)) {}
  FULGUR_OPTIONS(ImageNetOptions, FULGUR_IMAGENET_OPTIONS)

  // Set from C++ only (no config key).
  /// The pipelines (decode hints, uint8 transforms, ToTensor + Normalize).
  /// Unset: torchvision's ImageNet recipe (imagenet_pipelines.hpp) with
  /// crop_size, resize_size, mean and std: train = RandomResizedCrop +
  /// RandomHorizontalFlip (with augment; else as val), val = Resize +
  /// CenterCrop. A JPEG is decoded only where the pipeline needs it. Set,
  /// they run on the CPU: `decode: gpu` is refused, `auto` picks cpu.
  TORCH_ARG(std::shared_ptr<const Compose>, train_pipeline) = nullptr;
  TORCH_ARG(std::shared_ptr<const Compose>, val_pipeline) = nullptr;
};

/// ImageNet (ILSVRC-2012) or any dataset in its layouts, in image folders,
/// index files or HDF5 packs: the split's source (ImageFileList or
/// HDF5ImageFile) through an ImageDataset with the split's pipeline. Class labels come from the training split
/// (wnids sorted by name); the validation split is used for validation,
/// test and predict (ImageNet's test labels are not public).
class ImageNet : public ImageDataModule<ImageNetOptions> {
 public:
  using Options = ImageNetOptions;

  /// Validates the options; no file is touched before setup().
  explicit ImageNet(ImageNetOptions options);

  void setup(Stage stage) override;
  /// Class names, index = label; available after setup().
  const std::vector<std::string>& classes() const;
  int64_t num_classes() const { return static_cast<int64_t>(classes().size()); }
  std::shared_ptr<const EncodedImageSource> train_source() const { return train_; }
  std::shared_ptr<const EncodedImageSource> val_source() const { return val_; }
  /// Images skipped so far with skip_bad_samples by this module's training
  /// and validation loaders (each bad file counted once).
  int64_t skipped_train_samples() const { return train_bad_->count(); }
  int64_t skipped_val_samples() const { return val_bad_->count(); }

 private:
  std::shared_ptr<const EncodedImageSource> load(const std::string& split, const std::vector<std::string>& classes) const;

  DeviceDecode device_decode(bool training) const;
  std::shared_ptr<const ImageDataset> dataset(Stage stage, uint64_t seed) const override;
  std::shared_ptr<BadSampleLog> bad_samples(Stage stage) const override {
    return stage == Stage::Fit ? train_bad_ : val_bad_;
  }

  bool custom_pipelines_ = false;  // set from C++: the device recipes would differ
  std::shared_ptr<const EncodedImageSource> train_;
  std::shared_ptr<const EncodedImageSource> val_;
  std::vector<std::string> classes_;
  std::shared_ptr<BadSampleLog> train_bad_ = std::make_shared<BadSampleLog>();
  std::shared_ptr<BadSampleLog> val_bad_ = std::make_shared<BadSampleLog>();
};

}  // namespace fulgur
