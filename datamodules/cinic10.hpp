#pragma once

#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/datamodules/image_folder.hpp>

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

/// Options of the CINIC10 DataModule (config section `data`). mean and std
/// default to the CINIC-10 training-set statistics per RGB channel.
struct CINIC10Options {
  CINIC10Options() = default;
  explicit CINIC10Options(std::string root) : root_(std::move(root)) {}

  /// Folder holding train/, valid/ and test/ (required).
  TORCH_ARG(std::string, root) = "";
  TORCH_ARG(int64_t, batch_size) = 128;
  /// Loader threads per split (0: decode in the training thread).
  TORCH_ARG(int64_t, num_workers) = 2;
  /// Random translation of training images by up to 12.5% of their side.
  TORCH_ARG(bool, augment) = false;
  /// Reshuffle the training split every epoch.
  TORCH_ARG(bool, shuffle) = true;
  /// Log, count and replace unreadable images instead of stopping
  /// (DatasetLoaderOptions::skip_bad_samples).
  TORCH_ARG(bool, skip_bad_samples) = false;
  /// Collate batches into page-locked memory so the copy to the GPU is
  /// asynchronous (ignored without CUDA).
  TORCH_ARG(bool, pin_memory) = false;
  TORCH_ARG(std::vector<double>, mean) = {0.47889522, 0.47227842, 0.43047404};
  TORCH_ARG(std::vector<double>, std) = {0.24205776, 0.23828046, 0.25874835};
  /// Seed of the training order and augmentation; unset: drawn from torch's
  /// default CPU generator when train_dataloader() is called.
  TORCH_ARG(std::optional<uint64_t>, seed) = std::nullopt;

 public:
  /// Reads root, batch_size, num_workers, augment, shuffle, skip_bad_samples,
  /// pin_memory, mean, std and seed from `section`; an invalid value throws
  /// cli::ConfigError through section.fail() naming the dotted key.
  static CINIC10Options from_config(cli::ConfigSection& section);
};

/// CINIC-10 (or any dataset in its layout) as PNG folders:
/// `<root>/{train,valid,test}/<class>/*.png`, classes sorted by name. Images
/// become float [3, H, W] tensors, scaled to [0, 1] and normalised by
/// mean/std; with augment, training images are first shifted randomly by up
/// to 12.5% of their side with zero fill (no flips: the demo data are
/// digits). The shift of sample i in epoch e depends only on (seed, e, i),
/// so it is the same for any num_workers. Fit uses train + valid, Validate
/// valid, Test and Predict test.
class CINIC10 : public DataModule {
 public:
  /// Validates the options; no file is touched before setup().
  explicit CINIC10(CINIC10Options options);
  explicit CINIC10(cli::ConfigSection& section);

  void setup(Stage stage) override;

  std::shared_ptr<DataLoader> train_dataloader() override;
  std::shared_ptr<DataLoader> val_dataloader() override;
  std::shared_ptr<DataLoader> test_dataloader() override;
  std::shared_ptr<DataLoader> predict_dataloader() override;

  /// Class names (folder names), index = label; available after setup().
  const std::vector<std::string>& classes() const;
  int64_t num_classes() const { return static_cast<int64_t>(classes().size()); }

  const CINIC10Options& options() const { return options_; }
  /// The split datasets (without augmentation); null before their setup().
  std::shared_ptr<const ImageFolder> train_dataset() const { return train_; }
  std::shared_ptr<const ImageFolder> val_dataset() const { return valid_; }
  std::shared_ptr<const ImageFolder> test_dataset() const { return test_; }

  /// The transform of evaluation images: uint8 [H, W, 3] -> normalised float [3, H, W].
  torch::Tensor normalize(const torch::Tensor& image_hwc_uint8) const;

 private:
  std::shared_ptr<const ImageFolder> load_split(const std::string& split, const char* caller);
  std::shared_ptr<DataLoader> eval_loader(const std::shared_ptr<const ImageFolder>& dataset, const char* caller,
                                          const char* stage) const;

  CINIC10Options options_;
  std::vector<std::string> classes_;
  std::string classes_from_;  // split that defined classes_, for mismatch errors
  std::shared_ptr<const ImageFolder> train_;
  std::shared_ptr<const ImageFolder> valid_;
  std::shared_ptr<const ImageFolder> test_;
};

}  // namespace fulgur
