#include <fulgur/datamodules/datasets/cifar10.hpp>

#include <fulgur/datamodules/images/image_dataset.hpp>
#include <fulgur/datamodules/images/transforms/random_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <stdexcept>

namespace fulgur {

CIFAR10::CIFAR10(CIFAR10Options options) : options_(std::move(options)) { options_.validate(); }

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

std::shared_ptr<DataLoader> CIFAR10::train_dataloader() {
  if (!train_) throw std::logic_error("[CIFAR10::train_dataloader] the train split is not set up; call setup(Stage::Fit) first");
  const uint64_t seed = ImageDataset::seed_or_draw(options_.seed());
  return std::make_shared<DatasetLoader>(std::make_shared<const ImageDataset>(train_, train_pipeline(options_), seed),
                                         image_loader_options(options_, seed));
}

std::shared_ptr<DataLoader> CIFAR10::val_dataloader() {
  if (!test_) throw std::logic_error("[CIFAR10::val_dataloader] the test split is not set up; call setup() first");
  return std::make_shared<DatasetLoader>(std::make_shared<const ImageDataset>(test_, eval_pipeline(options_)),
                                         image_loader_options(options_, std::nullopt));
}

}  // namespace fulgur
