#pragma once

#include <fulgur/datamodules/images/transforms/compose.hpp>

#include <cstdint>
#include <memory>
#include <vector>

// torchvision's ImageNet recipe as Compose pipelines, built in one place for
// the ImageNet DataModule and the loader benchmark, so what is measured is
// what trains.
namespace fulgur {

/// ImageNet's per-channel statistics (torchvision's).
inline const std::vector<double> kImageNetMean = {0.485, 0.456, 0.406};
inline const std::vector<double> kImageNetStd = {0.229, 0.224, 0.225};

/// Training: RandomResizedCrop(crop_size) (scale 0.08-1, ratio 3/4-4/3),
/// RandomHorizontalFlip(0.5), ToTensor, Normalize(mean, std). A JPEG is
/// decoded only inside the crop window.
std::shared_ptr<const Compose> imagenet_train_pipeline(int64_t crop_size = 224,
                                                       const std::vector<double>& mean = kImageNetMean,
                                                       const std::vector<double>& std = kImageNetStd);

/// Evaluation: Resize(resize_size) of the shorter side, CenterCrop(crop_size),
/// ToTensor, Normalize(mean, std). Throws std::invalid_argument when
/// resize_size < crop_size (the crop would be padded with black).
std::shared_ptr<const Compose> imagenet_eval_pipeline(int64_t resize_size = 256, int64_t crop_size = 224,
                                                      const std::vector<double>& mean = kImageNetMean,
                                                      const std::vector<double>& std = kImageNetStd);

}  // namespace fulgur
