#include <fulgur/datamodules/cinic10.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/dataset_loader.hpp>
#include <fulgur/datamodules/image_decode.hpp>
#include <fulgur/datamodules/png_image.hpp>
#include <fulgur/datamodules/transforms.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>

namespace fulgur {

namespace {

std::string join(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + values[i];
  return out + "]";
}

/// The training images of one epoch with augmentation bound to that epoch.
/// A fresh view per iterate() means a set_epoch() call cannot change the
/// shifts of batches an earlier iterator is still building.
class AugmentedEpochView : public Dataset {
 public:
  AugmentedEpochView(std::shared_ptr<const ImageFolder> folder, std::vector<double> mean, std::vector<double> std,
                     uint64_t seed, int64_t epoch)
      : folder_(std::move(folder)), mean_(std::move(mean)), std_(std::move(std)), seed_(seed), epoch_(epoch) {}

  int64_t size() const override { return folder_->size(); }

  Example get(int64_t index) const override {
    if (index < 0 || index >= size()) {
      throw std::out_of_range("[CINIC10::train_dataloader] index " + std::to_string(index) + " is outside [0, " +
                              std::to_string(size()) + ")");
    }
    const auto& [path, label] = folder_->samples()[static_cast<size_t>(index)];
    const torch::Tensor image = read_image(path);
    auto generator = at::make_generator<at::CPUGeneratorImpl>(sample_seed(seed_, epoch_, index));
    return {normalize_chw(to_float_chw(random_translate_hwc(image, generator)), mean_, std_), label};
  }

 private:
  std::shared_ptr<const ImageFolder> folder_;
  std::vector<double> mean_;
  std::vector<double> std_;
  uint64_t seed_;
  int64_t epoch_;
};

/// Training loader with augmentation: a DatasetLoader over the epoch's view.
class AugmentedTrainLoader : public DataLoader {
 public:
  AugmentedTrainLoader(std::shared_ptr<const ImageFolder> folder, DatasetLoaderOptions options,
                       std::vector<double> mean, std::vector<double> std)
      : folder_(std::move(folder)),
        options_(std::move(options)),
        mean_(std::move(mean)),
        std_(std::move(std)),
        size_(DatasetLoader(folder_, options_).size()) {}

  int64_t size() const override { return size_; }
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  void shard(const Shard& shard) override {
    shard_ = shard;
    options_.seed(shard.seed);
    DatasetLoader loader(folder_, options_);
    loader.shard(shard);
    size_ = loader.size();
  }

  std::unique_ptr<BatchIterator> iterate(int64_t first_batch) override {
    auto view = std::make_shared<AugmentedEpochView>(folder_, mean_, std_, *options_.seed(), epoch_);
    DatasetLoader loader(std::move(view), options_);
    if (shard_) loader.shard(*shard_);
    loader.share_bad_samples(bad_samples_);
    loader.set_epoch(epoch_);
    return loader.iterate(first_batch);  // the iterator owns what it needs
  }

 private:
  std::shared_ptr<const ImageFolder> folder_;
  DatasetLoaderOptions options_;  // seed always set
  std::vector<double> mean_;
  std::vector<double> std_;
  int64_t size_;
  int64_t epoch_ = 0;
  std::optional<Shard> shard_;
  std::shared_ptr<BadSampleLog> bad_samples_ = std::make_shared<BadSampleLog>();
};

}  // namespace

CINIC10::CINIC10(CINIC10Options options) : options_(std::move(options)) { options_.validate(); }

torch::Tensor CINIC10::normalize(const torch::Tensor& image_hwc_uint8) const {
  return normalize_chw(to_float_chw(image_hwc_uint8), options_.mean(), options_.std());
}

std::shared_ptr<const ImageFolder> CINIC10::load_split(const std::string& split, const char* caller) {
  const std::filesystem::path dir = std::filesystem::path(options_.root()) / split;
  std::error_code ignored;
  if (!std::filesystem::is_directory(dir, ignored)) {
    throw DataError(std::string(caller) + " split folder '" + dir.string() +
                             "' does not exist; CINIC-10 needs root/train, root/valid and root/test, "
                             "each with one folder of images per class");
  }
  // The lambda copies the statistics: datasets may outlive this module.
  auto folder = std::make_shared<const ImageFolder>(
      dir, [mean = options_.mean(), std = options_.std()](torch::Tensor image, int64_t) {
        return normalize_chw(to_float_chw(image), mean, std);
      });
  // Labels are folder indices, so every split must list the same classes.
  if (classes_from_.empty()) {
    classes_ = folder->classes();
    classes_from_ = split;
  } else if (folder->classes() != classes_) {
    throw DataError(std::string(caller) + " split '" + split + "' has classes " + join(folder->classes()) +
                             " but '" + classes_from_ + "' has " + join(classes_));
  }
  return folder;
}

void CINIC10::setup(Stage stage) {
  const char* caller = "[CINIC10::setup]";
  switch (stage) {
    case Stage::Fit:
      train_ = load_split("train", caller);
      valid_ = load_split("valid", caller);
      break;
    case Stage::Validate:
      valid_ = load_split("valid", caller);
      break;
    case Stage::Test:
    case Stage::Predict:
      test_ = load_split("test", caller);
      break;
  }
}

const std::vector<std::string>& CINIC10::classes() const {
  if (classes_from_.empty()) throw std::logic_error("[CINIC10::classes] no split is set up yet; call setup() first");
  return classes_;
}

std::shared_ptr<DataLoader> CINIC10::train_dataloader() {
  if (!train_) throw std::logic_error("[CINIC10::train_dataloader] the train split is not set up; call setup(Stage::Fit) first");
  auto options = DatasetLoaderOptions(options_.batch_size())
                     .shuffle(options_.shuffle())
                     .drop_last(false)
                     .num_workers(options_.num_workers())
                     .pin_memory(options_.pin_memory())
                     .skip_bad_samples(options_.skip_bad_samples());
  if (options_.seed()) options.seed(static_cast<uint64_t>(*options_.seed()));
  if (!options_.augment()) return std::make_shared<DatasetLoader>(train_, options);
  if (!options.seed()) {
    // One seed for both order and shifts; DatasetLoader would draw its own.
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    options.seed(generator.get<at::CPUGeneratorImpl>()->random64());
  }
  return std::make_shared<AugmentedTrainLoader>(train_, options, options_.mean(), options_.std());
}

std::shared_ptr<DataLoader> CINIC10::eval_loader(const std::shared_ptr<const ImageFolder>& dataset,
                                                 const char* caller, const char* stage) const {
  if (!dataset) {
    throw std::logic_error(std::string(caller) + " the split is not set up; call setup(Stage::" + stage + ") first");
  }
  // A fixed seed: evaluation never shuffles, and drawing one would advance
  // torch's default generator as a side effect.
  return std::make_shared<DatasetLoader>(
      dataset, DatasetLoaderOptions(options_.batch_size())
                   .num_workers(options_.num_workers())
                   .pin_memory(options_.pin_memory())
                   .skip_bad_samples(options_.skip_bad_samples())
                   .seed(0));
}

std::shared_ptr<DataLoader> CINIC10::val_dataloader() {
  return eval_loader(valid_, "[CINIC10::val_dataloader]", "Validate");
}

std::shared_ptr<DataLoader> CINIC10::test_dataloader() {
  return eval_loader(test_, "[CINIC10::test_dataloader]", "Test");
}

std::shared_ptr<DataLoader> CINIC10::predict_dataloader() {
  return eval_loader(test_, "[CINIC10::predict_dataloader]", "Predict");
}

}  // namespace fulgur
