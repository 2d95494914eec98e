#pragma once

#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/transforms/center_crop.hpp>
#include <fulgur/datamodules/images/transforms/random_resized_crop.hpp>
#include <fulgur/datamodules/images/transforms/resize.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace fulgur {

/// What the host decides for one image before it is decoded on the device:
/// the region to decode (empty: all of it) and whether to mirror it.
struct DeviceImagePlan {
  DecodeRequest region;
  bool flip = false;
};

/// torchvision's ImageNet recipes (imagenet_pipelines.hpp) for images
/// decoded on the device: the random numbers are drawn on the host exactly
/// as the CPU pipeline draws them (the same seed gives the same crops and
/// flips), the pixels are resized, flipped and normalized with LibTorch ops
/// on whatever device holds them (a GPU in training; the CPU in the tests).
/// Resizing is bilinear with antialiasing, torchvision's antialias=True,
/// in float without rounding to uint8 in between.
class DeviceImageRecipe {
 public:
  /// RandomResizedCrop(crop_size) (the crop is the decode region), then
  /// RandomHorizontalFlip(0.5).
  static DeviceImageRecipe train(int64_t crop_size, std::vector<double> mean, std::vector<double> std);
  /// Resize(resize_size) of the shorter side, then CenterCrop(crop_size).
  static DeviceImageRecipe eval(int64_t resize_size, int64_t crop_size, std::vector<double> mean,
                                std::vector<double> std);

  /// The plan for a source of height x width, drawing from `random`.
  DeviceImagePlan plan(int64_t height, int64_t width, SampleRandom& random) const;
  /// The decoded region (uint8 [h, w, 3], any device) of a source of
  /// source_height x source_width as float [3, crop, crop] in [0, 255].
  torch::Tensor finish(const torch::Tensor& decoded, const DeviceImagePlan& plan, int64_t source_height,
                       int64_t source_width) const;
  /// Stacks finished images into [N, 3, crop, crop] with ToTensor's 1/255
  /// and Normalize applied in one pass.
  torch::Tensor normalize(const std::vector<torch::Tensor>& images) const;

  int64_t crop_size() const { return crop_size_; }

 private:
  DeviceImageRecipe(int64_t crop_size, std::vector<double> mean, std::vector<double> std);

  int64_t crop_size_;
  std::vector<double> mean_;
  std::vector<double> std_;
  std::optional<RandomResizedCrop> random_crop_;  // training
  std::optional<Resize> resize_;                  // evaluation
  std::optional<CenterCrop> center_crop_;         // evaluation
};

}  // namespace fulgur
