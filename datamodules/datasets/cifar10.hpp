#pragma once

#include <fulgur/datamodules/datasets/channel_stats_check.hpp>
#include <fulgur/datamodules/datasets/cifar10_batches.hpp>
#include <fulgur/datamodules/images/image_data_module.hpp>
#include <fulgur/datamodules/images/transforms/compose.hpp>
#include <fulgur/datamodules/images/image_loader_options.hpp>
#include <fulgur/core/options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

// The fields of CIFAR10Options: type, name, default, doc, check. mean and std
// default to the CIFAR-10 training-set statistics.
#define FULGUR_CIFAR10_OPTIONS(X)                                                                                 \
  X(std::string, root, "", "folder holding data_batch_1.bin .. data_batch_5.bin and test_batch.bin",             \
    check::NotEmpty{})                                                                                            \
  X(bool, augment, true, "RandomCrop(32, padding 4) + horizontal flip of training images", check::Any{})          \
  X(std::vector<double>, mean, (std::vector<double>{0.4914, 0.4822, 0.4465}), "per-channel mean (RGB)",           \
    check::ChannelStats{})                                                                                        \
  X(std::vector<double>, std, (std::vector<double>{0.2470, 0.2435, 0.2616}), "per-channel std (RGB)",             \
    check::ChannelStats{true})                                                                                    \
  FULGUR_IMAGE_LOADER_OPTIONS(X, 128, 2, false, false)

/// Options of the CIFAR10 DataModule (config section `data`).
struct CIFAR10Options {
  CIFAR10Options() = default;
  explicit CIFAR10Options(std::string root) : root_(std::move(root)) {}
  FULGUR_OPTIONS(CIFAR10Options, FULGUR_CIFAR10_OPTIONS)
};

/// CIFAR-10 from its binary batches (cifar-10-batches-bin, CIFAR10Batches)
/// through an ImageDataset: training images get RandomCrop(32, 4) and
/// RandomHorizontalFlip with augment, every image ToTensor + Normalize.
/// CIFAR-10 has no validation split: Fit trains on the five data batches
/// and validates on test_batch.bin, which Test and Predict use too.
class CIFAR10 : public ImageDataModule<CIFAR10Options> {
 public:
  using Options = CIFAR10Options;

  /// Validates the options; no file is touched before setup().
  explicit CIFAR10(CIFAR10Options options);

  void setup(Stage stage) override;
  /// The split sources; null before setup() (train: before setup(Stage::Fit)).
  std::shared_ptr<const CIFAR10Batches> train_source() const { return train_; }
  std::shared_ptr<const CIFAR10Batches> test_source() const { return test_; }

  /// With augment: RandomCrop(32, 4) + RandomHorizontalFlip, then ToTensor +
  /// Normalize(mean, std); without, as eval_pipeline.
  static std::shared_ptr<const Compose> train_pipeline(const CIFAR10Options& options);
  /// ToTensor + Normalize(mean, std).
  static std::shared_ptr<const Compose> eval_pipeline(const CIFAR10Options& options);

 private:
  std::shared_ptr<const ImageDataset> dataset(Stage stage, uint64_t seed) const override;
  std::shared_ptr<const CIFAR10Batches> train_;
  std::shared_ptr<const CIFAR10Batches> test_;
};

}  // namespace fulgur
