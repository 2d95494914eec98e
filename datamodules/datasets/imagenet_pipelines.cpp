#include <fulgur/datamodules/datasets/imagenet_pipelines.hpp>

#include <fulgur/datamodules/images/transforms/center_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>
#include <fulgur/datamodules/images/transforms/random_resized_crop.hpp>
#include <fulgur/datamodules/images/transforms/resize.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

using Steps = std::vector<std::shared_ptr<const Transform>>;

std::shared_ptr<const Compose> imagenet_train_pipeline(int64_t crop_size, const std::vector<double>& mean,
                                                       const std::vector<double>& std) {
  if (crop_size < 1) {
    throw std::invalid_argument("[imagenet_train_pipeline] crop_size must be >= 1, got " + std::to_string(crop_size));
  }
  return std::make_shared<const Compose>(
      Steps{std::make_shared<RandomResizedCrop>(crop_size), std::make_shared<RandomHorizontalFlip>()},
      Normalize(mean, std));
}

std::shared_ptr<const Compose> imagenet_eval_pipeline(int64_t resize_size, int64_t crop_size,
                                                      const std::vector<double>& mean, const std::vector<double>& std) {
  if (crop_size < 1 || resize_size < crop_size) {
    throw std::invalid_argument("[imagenet_eval_pipeline] expected 1 <= crop_size <= resize_size, got crop_size " +
                                std::to_string(crop_size) + " and resize_size " + std::to_string(resize_size));
  }
  return std::make_shared<const Compose>(
      Steps{std::make_shared<Resize>(resize_size), std::make_shared<CenterCrop>(crop_size)}, Normalize(mean, std));
}

}  // namespace fulgur
