#include <fulgur/datamodules/images/transforms/center_crop.hpp>

#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

// Offset of the window on one axis: torchvision pads a too-small image by
// (crop - size) / 2 first (floor), else rounds (size - crop) / 2 half to even.
int64_t window_start(int64_t size, int64_t crop) {
  if (crop > size) return -((crop - size) / 2);
  return static_cast<int64_t>(std::nearbyint(static_cast<double>(size - crop) / 2.0));
}

}  // namespace

CenterCrop::CenterCrop(int64_t height, int64_t width) : height_(height), width_(width) {
  if (height < 1 || width < 1) {
    throw std::invalid_argument("[CenterCrop::CenterCrop] size must be positive, got " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
}

CropBox CenterCrop::window(int64_t height, int64_t width) const {
  return {window_start(height, height_), window_start(width, width_), height_, width_};
}

Image CenterCrop::apply(Image image, SampleRandom&) const {
  if (image.height == height_ && image.width == width_) return image;
  const CropBox box = window(image.height, image.width);
  return crop_image(image, box.top, box.left, box.height, box.width);
}

}  // namespace fulgur
