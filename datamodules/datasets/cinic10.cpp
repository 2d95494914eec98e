#include <fulgur/datamodules/datasets/cinic10.hpp>

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <algorithm>
#include <stdexcept>

namespace fulgur {

namespace {

std::string join(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + values[i];
  return out + "]";
}

}  // namespace

CINIC10::CINIC10(CINIC10Options options) : ImageDataModule("CINIC10", std::move(options)) { options_.validate(); }

std::shared_ptr<const Compose> CINIC10::train_pipeline(const CINIC10Options& options) {
  if (!options.augment()) return eval_pipeline(options);
  using Steps = std::vector<std::shared_ptr<const Transform>>;
  return std::make_shared<const Compose>(
      Steps{std::make_shared<RandomCrop>(options.crop_size(), std::max<int64_t>(1, options.crop_size() / 8)),
            std::make_shared<RandomHorizontalFlip>()},
      Normalize(options.mean(), options.std()));
}

std::shared_ptr<const Compose> CINIC10::eval_pipeline(const CINIC10Options& options) {
  return std::make_shared<const Compose>(std::vector<std::shared_ptr<const Transform>>{},
                                         Normalize(options.mean(), options.std()));
}

std::shared_ptr<const ImageFileList> CINIC10::load_split(const std::string& split, const char* caller) {
  const std::filesystem::path dir = std::filesystem::path(options_.root()) / split;
  std::error_code ignored;
  if (!std::filesystem::is_directory(dir, ignored)) {
    throw DataError(std::string(caller) + " split folder '" + dir.string() +
                    "' does not exist; CINIC-10 needs root/train, root/valid and root/test, "
                    "each with one folder of images per class");
  }
  auto source = std::make_shared<const ImageFileList>(ImageFileList::from_class_folders(dir));
  // Labels are folder indices, so every split must list the same classes.
  if (classes_from_.empty()) {
    classes_ = source->classes();
    classes_from_ = split;
  } else if (source->classes() != classes_) {
    throw DataError(std::string(caller) + " split '" + split + "' has classes " + join(source->classes()) + " but '" +
                    classes_from_ + "' has " + join(classes_));
  }
  return source;
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

std::shared_ptr<const ImageDataset> CINIC10::dataset(Stage stage, uint64_t seed) const {
  if (stage == Stage::Fit) return read_split(train_, train_pipeline(options_), seed);
  return read_split(stage == Stage::Validate ? valid_ : test_, eval_pipeline(options_));
}

}  // namespace fulgur
