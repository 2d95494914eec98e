#pragma once

#include <fulgur/datamodules/channel_stats_check.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/datamodules/default_num_workers.hpp>
#include <fulgur/datamodules/image_folder.hpp>
#include <fulgur/modules/options.hpp>

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
  X(int64_t, batch_size, 128, "samples per batch", check::AtLeast{1})                                               \
  X(int64_t, num_workers, default_num_workers(2), "loader threads per split (0: in the training thread)",           \
    check::AtLeast{0})                                                                                              \
  X(bool, augment, false, "shift training images randomly by up to 12.5% of their side", check::Any{})              \
  X(bool, shuffle, true, "reshuffle the training split every epoch", check::Any{})                                  \
  X(bool, skip_bad_samples, false, "log, count and replace unreadable images instead of stopping", check::Any{})    \
  X(bool, pin_memory, false, "page-locked batches for an asynchronous copy to the GPU", check::Any{})               \
  X(std::vector<double>, mean, (std::vector<double>{0.47889522, 0.47227842, 0.43047404}), "per-channel mean (RGB)", \
    check::ChannelStats{})                                                                                          \
  X(std::vector<double>, std, (std::vector<double>{0.24205776, 0.23828046, 0.25874835}), "per-channel std (RGB)",   \
    check::ChannelStats{true})                                                                                      \
  X(std::optional<int64_t>, seed, std::nullopt, "seed of the training order and shifts; null: from torch's seed",   \
    check::AtLeast{0})

/// Options of the CINIC10 DataModule (config section `data`).
struct CINIC10Options {
  CINIC10Options() = default;
  explicit CINIC10Options(std::string root) : root_(std::move(root)) {}
  FULGUR_OPTIONS(CINIC10Options, FULGUR_CINIC10_OPTIONS)
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
  using Options = CINIC10Options;

  /// Validates the options; no file is touched before setup().
  explicit CINIC10(CINIC10Options options);

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
