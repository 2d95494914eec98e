#include <fulgur/datamodules/images/transforms/random_crop.hpp>

#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding)
    : height_(height), width_(width), padding_(padding) {
  if (height < 1 || width < 1 || padding < 0) {
    throw std::invalid_argument("[RandomCrop::RandomCrop] size must be positive and padding >= 0, got size " +
                                std::to_string(height) + "x" + std::to_string(width) + ", padding " +
                                std::to_string(padding));
  }
}

Image RandomCrop::crop_at(const Image& image, int64_t top, int64_t left) const {
  return crop_image(image, top - padding_, left - padding_, height_, width_);
}

Image RandomCrop::apply(Image image, SampleRandom& random) const {
  const int64_t padded_height = image.height + 2 * padding_;
  const int64_t padded_width = image.width + 2 * padding_;
  if (padded_height < height_ || padded_width < width_) {
    throw std::invalid_argument("[RandomCrop::apply] a " + std::to_string(image.height) + "x" +
                                std::to_string(image.width) + " image padded by " + std::to_string(padding_) +
                                " is smaller than the " + std::to_string(height_) + "x" + std::to_string(width_) +
                                " crop");
  }
  const int64_t top = uniform_int(random, 0, padded_height - height_ + 1);
  const int64_t left = uniform_int(random, 0, padded_width - width_ + 1);
  return crop_at(image, top, left);
}

}  // namespace fulgur
