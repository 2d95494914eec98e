#pragma once

#include <fulgur/datamodules/datasets/channel_stats_check.hpp>
#include <fulgur/datamodules/images/image_data_module.hpp>
#include <fulgur/datamodules/images/image_file_list.hpp>
#include <fulgur/datamodules/images/transforms/compose.hpp>
#include <fulgur/datamodules/images/image_loader_options.hpp>
#include <fulgur/core/options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

// The fields of CINIC10Options: type, name, default, doc, check. num_workers
// defaults to SLURM_CPUS_PER_TASK under SLURM; mean and std to the CINIC-10
// training-set statistics.
#define FULGUR_CINIC10_OPTIONS(X)                                                                                   \
  X(std::string, root, "", "folder holding train/, valid/ and test/", check::NotEmpty{})                            \
  X(bool, augment, false, "random crop (padding crop_size / 8) + horizontal flip of training images", check::Any{})  \
  X(int64_t, crop_size, 32, "side of the training crop with augment (the images' side)", check::AtLeast{1})          \
  X(std::vector<double>, mean, (std::vector<double>{0.47889522, 0.47227842, 0.43047404}), "per-channel mean (RGB)", \
    check::ChannelStats{})                                                                                          \
  X(std::vector<double>, std, (std::vector<double>{0.24205776, 0.23828046, 0.25874835}), "per-channel std (RGB)",   \
    check::ChannelStats{true})                                                                                      \
  FULGUR_IMAGE_LOADER_OPTIONS(X, 128, 2, false, false)

/// Options of the CINIC10 DataModule (config section `data`).
struct CINIC10Options {
  CINIC10Options() = default;
  explicit CINIC10Options(std::string root) : root_(std::move(root)) {}
  FULGUR_OPTIONS(CINIC10Options, FULGUR_CINIC10_OPTIONS)
};

/// CINIC-10 (or any dataset in its layout) as PNG folders:
/// `<root>/{train,valid,test}/<class>/*.png`, classes sorted by name: an
/// ImageFileList per split read through an ImageDataset. Images become
/// float [3, H, W] tensors, scaled to [0, 1] and normalised by mean/std;
/// with augment, training images first go through RandomCrop(crop_size,
/// padding crop_size / 8) and RandomHorizontalFlip (the CIFAR recipe). The
/// crop of sample i in epoch e depends only on (seed, e, i), so it is the
/// same for any num_workers. Fit uses train + valid, Validate valid, Test
/// and Predict test.
class CINIC10 : public ImageDataModule<CINIC10Options> {
 public:
  using Options = CINIC10Options;

  /// Validates the options; no file is touched before setup().
  explicit CINIC10(CINIC10Options options);

  void setup(Stage stage) override;

  /// Class names (folder names), index = label; available after setup().
  const std::vector<std::string>& classes() const;
  int64_t num_classes() const { return static_cast<int64_t>(classes().size()); }

  /// The split sources; null before their setup().
  std::shared_ptr<const ImageFileList> train_source() const { return train_; }
  std::shared_ptr<const ImageFileList> val_source() const { return valid_; }
  std::shared_ptr<const ImageFileList> test_source() const { return test_; }

  /// The training pipeline: with augment RandomCrop + RandomHorizontalFlip,
  /// then ToTensor + Normalize(mean, std); without, as eval_pipeline.
  static std::shared_ptr<const Compose> train_pipeline(const CINIC10Options& options);
  /// Evaluation: ToTensor + Normalize(mean, std).
  static std::shared_ptr<const Compose> eval_pipeline(const CINIC10Options& options);

 private:
  std::shared_ptr<const ImageFileList> load_split(const std::string& split, const char* caller);
  std::shared_ptr<const ImageDataset> dataset(Stage stage, uint64_t seed) const override;

  std::vector<std::string> classes_;
  std::string classes_from_;  // split that defined classes_, for mismatch errors
  std::shared_ptr<const ImageFileList> train_;
  std::shared_ptr<const ImageFileList> valid_;
  std::shared_ptr<const ImageFileList> test_;
};

}  // namespace fulgur
