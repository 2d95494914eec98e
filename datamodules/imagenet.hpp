#pragma once

#include <fulgur/datamodules/bad_sample_log.hpp>
#include <fulgur/datamodules/compose.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/datamodules/encoded_image_dataset.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur::cli {
class ConfigSection;
}

namespace fulgur {

/// Options of the ImageNet DataModule (config section `data`).
struct ImageNetOptions {
  ImageNetOptions() = default;
  explicit ImageNetOptions(std::string root) : root_(std::move(root)) {}

  /// The dataset folder (required); what it holds depends on format.
  TORCH_ARG(std::string, root) = "";
  /// "folder": root/train/<wnid>/*.JPEG and root/val/ as class folders, or
  /// flat with LOC_val_solution.csv in root or root/val. "hdf5": root/train.h5
  /// and root/val.h5 written by fulgur_pack. "index": root/train.csv and
  /// root/val.csv with `path,label` lines, paths relative to root.
  TORCH_ARG(std::string, format) = "folder";
  TORCH_ARG(int64_t, batch_size) = 256;
  /// Loader threads per split (0: decode in the training thread).
  TORCH_ARG(int64_t, num_workers) = 8;
  /// Random augmentation of training images: RandomResizedCrop(crop_size) and
  /// a horizontal flip. Off: training images get the validation recipe
  /// (Resize + CenterCrop), so a batch still has one shape.
  TORCH_ARG(bool, augment) = true;
  TORCH_ARG(bool, shuffle) = true;
  /// Keep loader threads alive across epochs.
  TORCH_ARG(bool, persistent_workers) = true;
  /// Pinned batches for a non_blocking copy to CUDA (ignored without CUDA).
  TORCH_ARG(bool, pin_memory) = true;
  /// Log, count and replace unreadable images instead of stopping.
  TORCH_ARG(bool, skip_bad_samples) = false;
  /// ImageNet's per-channel statistics.
  TORCH_ARG(std::vector<double>, mean) = {0.485, 0.456, 0.406};
  TORCH_ARG(std::vector<double>, std) = {0.229, 0.224, 0.225};
  /// Seed of the training order and augmentation; unset: drawn from torch's
  /// default CPU generator when train_dataloader() is called.
  TORCH_ARG(std::optional<uint64_t>, seed) = std::nullopt;
  /// Side of the square images a batch holds: [batch_size, 3, crop_size,
  /// crop_size] from every loader.
  TORCH_ARG(int64_t, crop_size) = 224;
  /// Shorter side after the evaluation Resize, before the CenterCrop; at
  /// least crop_size (torchvision's recipe: 256 for 224).
  TORCH_ARG(int64_t, resize_size) = 256;
  /// The pipelines (decode hints, uint8 transforms, ToTensor + Normalize).
  /// Unset: torchvision's ImageNet recipe (imagenet_pipelines.hpp) with
  /// crop_size, resize_size, mean and std: train = RandomResizedCrop +
  /// RandomHorizontalFlip (with augment; else as val), val = Resize +
  /// CenterCrop. A JPEG is decoded only where the pipeline needs it.
  TORCH_ARG(std::shared_ptr<const Compose>, train_pipeline) = nullptr;
  TORCH_ARG(std::shared_ptr<const Compose>, val_pipeline) = nullptr;
  /// Free-form transforms on whole decoded images (uint8 HWC -> float CHW),
  /// drawing from the per-sample generator they are given. When set, one
  /// replaces that split's pipeline.
  TORCH_ARG(RandomImageTransform, train_transform) = nullptr;
  TORCH_ARG(RandomImageTransform, val_transform) = nullptr;

 public:
  /// Reads every option but the pipelines and transforms from `section`; an invalid value
  /// throws cli::ConfigError naming the dotted key.
  static ImageNetOptions from_config(cli::ConfigSection& section);
};

/// ImageNet (ILSVRC-2012) or any dataset in its layouts, in image folders,
/// index files or HDF5 packs. Class labels come from the training split
/// (wnids sorted by name); the validation split is used for validation,
/// test and predict (ImageNet's test labels are not public).
class ImageNet : public DataModule {
 public:
  /// Validates the options; no file is touched before setup().
  explicit ImageNet(ImageNetOptions options);
  explicit ImageNet(cli::ConfigSection& section);

  void setup(Stage stage) override;
  std::shared_ptr<DataLoader> train_dataloader() override;
  std::shared_ptr<DataLoader> val_dataloader() override;
  std::shared_ptr<DataLoader> test_dataloader() override { return val_dataloader(); }
  std::shared_ptr<DataLoader> predict_dataloader() override { return val_dataloader(); }

  /// Class names, index = label; available after setup().
  const std::vector<std::string>& classes() const;
  int64_t num_classes() const { return static_cast<int64_t>(classes().size()); }
  const ImageNetOptions& options() const { return options_; }
  std::shared_ptr<const EncodedImageSource> train_source() const { return train_; }
  std::shared_ptr<const EncodedImageSource> val_source() const { return val_; }
  /// Images skipped so far with skip_bad_samples by this module's training
  /// and validation loaders (each bad file counted once).
  int64_t skipped_train_samples() const { return train_bad_->count(); }
  int64_t skipped_val_samples() const { return val_bad_->count(); }

 private:
  std::shared_ptr<const EncodedImageSource> load(const std::string& split, const std::vector<std::string>& classes) const;

  ImageNetOptions options_;
  std::shared_ptr<const EncodedImageSource> train_;
  std::shared_ptr<const EncodedImageSource> val_;
  std::vector<std::string> classes_;
  std::shared_ptr<BadSampleLog> train_bad_ = std::make_shared<BadSampleLog>();
  std::shared_ptr<BadSampleLog> val_bad_ = std::make_shared<BadSampleLog>();
};

}  // namespace fulgur
