#include <fulgur/datamodules/datasets/cifar10.hpp>

#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <stdexcept>

namespace fulgur {

CIFAR10::CIFAR10(CIFAR10Options options) : ImageDataModule("CIFAR10", std::move(options)) { options_.validate(); }

std::shared_ptr<const Compose> CIFAR10::train_pipeline(const CIFAR10Options& options) {
  if (!options.augment()) return eval_pipeline(options);
  using Steps = std::vector<std::shared_ptr<const Transform>>;
  return std::make_shared<const Compose>(
      Steps{std::make_shared<RandomCrop>(CIFAR10Batches::kSide, 4), std::make_shared<RandomHorizontalFlip>()},
      Normalize(options.mean(), options.std()));
}

std::shared_ptr<const Compose> CIFAR10::eval_pipeline(const CIFAR10Options& options) {
  return std::make_shared<const Compose>(std::vector<std::shared_ptr<const Transform>>{},
                                         Normalize(options.mean(), options.std()));
}

void CIFAR10::setup(Stage stage) {
  if (stage == Stage::Fit) train_ = std::make_shared<const CIFAR10Batches>(options_.root(), true);
  test_ = std::make_shared<const CIFAR10Batches>(options_.root(), false);
}

std::shared_ptr<const ImageDataset> CIFAR10::dataset(Stage stage, uint64_t seed) const {
  return stage == Stage::Fit ? read_split(train_, train_pipeline(options_), seed) : read_split(test_, eval_pipeline(options_));
}

}  // namespace fulgur
