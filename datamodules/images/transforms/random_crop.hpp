#pragma once

#include <fulgur/datamodules/images/transforms/transform.hpp>

#include <cstdint>

namespace fulgur {

/// torchvision's RandomCrop(size, padding): pads every side with `padding`
/// zero pixels, then takes a height x width window at a uniformly random
/// position (the CIFAR/CINIC recipe is RandomCrop(32, 4)). An image that is
/// smaller than the window even after padding is an error.
class RandomCrop : public Transform {
 public:
  RandomCrop(int64_t size, int64_t padding) : RandomCrop(size, size, padding) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding);

  /// The window at (top, left) of the padded image (no randomness).
  Image crop_at(const Image& image, int64_t top, int64_t left) const;

  Image apply(Image image, SampleRandom& random) const override;

 private:
  int64_t height_;
  int64_t width_;
  int64_t padding_;
};

}  // namespace fulgur
