#pragma once

#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/image_loader_options.hpp>
#include <fulgur/datamodules/loading/bad_sample_log.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/core/options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace fulgur {

/// What every image data module (CINIC10, CIFAR10, ImageNet) shares, written
/// once: a training loader over a seeded augmentation, validation, test and
/// predict loaders read in order, all with the FULGUR_IMAGE_LOADER_OPTIONS
/// fields of `Options`, and those fields by name for Tuner::scale_batch_size
/// (batch_arg). A module says which dataset each stage reads.
template <class Options>
class ImageDataModule : public DataModule {
 public:
  std::shared_ptr<DataLoader> train_dataloader() override {
    const uint64_t seed = ImageDataset::seed_or_draw(options_.seed());
    // The loader's set_epoch selects the epoch's augmentation (ImageDataset::at_epoch).
    return loader(Stage::Fit, "train_dataloader", seed, seed);
  }
  std::shared_ptr<DataLoader> val_dataloader() override {
    return loader(Stage::Validate, "val_dataloader", 0, std::nullopt);
  }
  std::shared_ptr<DataLoader> test_dataloader() override {
    return loader(Stage::Test, "test_dataloader", 0, std::nullopt);
  }
  std::shared_ptr<DataLoader> predict_dataloader() override {
    return loader(Stage::Predict, "predict_dataloader", 0, std::nullopt);
  }
  /// Options of type int64_t by name ("batch_size"), for Tuner::scale_batch_size.
  int64_t* batch_arg(const std::string& name) override { return find_option<int64_t>(options_, name); }

  const Options& options() const { return options_; }

 protected:
  /// `name` starts the errors ("[CINIC10::val_dataloader] ...").
  ImageDataModule(std::string name, Options options) : name_(std::move(name)), options_(std::move(options)) {}

  /// The dataset the loaders of `stage` read (Stage::Fit: the training
  /// split, augmented from `seed`), or null when its split is not set up.
  virtual std::shared_ptr<const ImageDataset> dataset(Stage stage, uint64_t seed) const = 0;
  /// Where the loaders of `stage` count skipped samples; null: each loader its own.
  virtual std::shared_ptr<BadSampleLog> bad_samples(Stage stage) const {
    (void)stage;
    return nullptr;
  }
  /// `source` through `pipeline` (augmented from `seed`), or null without a source.
  template <class Source>
  static std::shared_ptr<const ImageDataset> read_split(const std::shared_ptr<const Source>& source,
                                                  std::shared_ptr<const Compose> pipeline, uint64_t seed = 0) {
    return source ? std::make_shared<const ImageDataset>(source, std::move(pipeline), seed) : nullptr;
  }

  Options options_;

 private:
  std::shared_ptr<DataLoader> loader(Stage stage, const char* caller, uint64_t seed,
                                     std::optional<uint64_t> train_seed) const {
    auto data = dataset(stage, seed);
    if (!data) {
      throw std::logic_error("[" + name_ + "::" + caller + "] the " + (stage == Stage::Fit ? "train " : "") +
                             "split is not set up; call setup(Stage::" + kStageNames[static_cast<int>(stage)] + ") first");
    }
    auto out = std::make_shared<DatasetLoader>(std::move(data), image_loader_options(options_, train_seed));
    if (auto log = bad_samples(stage)) out->share_bad_samples(std::move(log));
    return out;
  }

  static constexpr const char* kStageNames[] = {"Fit", "Validate", "Test", "Predict"};  // Stage's enumerators
  std::string name_;
};

}  // namespace fulgur
