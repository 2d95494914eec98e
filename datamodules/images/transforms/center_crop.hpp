#pragma once

#include <fulgur/datamodules/images/transforms/transform.hpp>

#include <cstdint>

namespace fulgur {

/// torchvision's CenterCrop: the central height x width window (offsets
/// rounded half to even, as Python's round()); an image smaller than the
/// window is padded with zeros around it.
class CenterCrop : public Transform {
 public:
  explicit CenterCrop(int64_t size) : CenterCrop(size, size) {}
  CenterCrop(int64_t height, int64_t width);

  Image apply(Image image, SampleRandom& random) const override;
  /// The window in an image of height x width (top/left negative when the
  /// image is smaller and gets padded).
  CropBox window(int64_t height, int64_t width) const;

 private:
  int64_t height_;
  int64_t width_;
};

}  // namespace fulgur
