#include <fulgur/datamodules/images/transforms/random_resized_crop.hpp>

#include <fulgur/datamodules/images/transforms/image_ops.hpp>
#include <fulgur/datamodules/images/transforms/image_resize.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

// Python's round(): halves go to the even neighbour (the default FP mode).
int64_t round_half_even(double value) { return static_cast<int64_t>(std::nearbyint(value)); }

}  // namespace

RandomResizedCrop::RandomResizedCrop(int64_t size, std::array<double, 2> scale, std::array<double, 2> ratio)
    : RandomResizedCrop(size, size, scale, ratio) {}

RandomResizedCrop::RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale,
                                     std::array<double, 2> ratio)
    : height_(height), width_(width), scale_(scale), ratio_(ratio) {
  const std::string where = "[RandomResizedCrop::RandomResizedCrop] ";
  if (height < 1 || width < 1) {
    throw std::invalid_argument(where + "size must be positive, got " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
  if (!(scale[0] > 0 && scale[0] <= scale[1] && scale[1] <= 1)) {
    throw std::invalid_argument(where + "scale must satisfy 0 < min <= max <= 1, got (" + std::to_string(scale[0]) +
                                ", " + std::to_string(scale[1]) + ")");
  }
  if (!(ratio[0] > 0 && ratio[0] <= ratio[1])) {
    throw std::invalid_argument(where + "ratio must satisfy 0 < min <= max, got (" + std::to_string(ratio[0]) + ", " +
                                std::to_string(ratio[1]) + ")");
  }
}

CropBox RandomResizedCrop::sample_box(int64_t image_height, int64_t image_width, SampleRandom& random) const {
  const double area = static_cast<double>(image_height) * static_cast<double>(image_width);
  const double log_ratio_low = std::log(ratio_[0]);
  const double log_ratio_high = std::log(ratio_[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform_real(random, scale_[0], scale_[1]);
    const double aspect = std::exp(uniform_real(random, log_ratio_low, log_ratio_high));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= image_width && 0 < h && h <= image_height) {
      const int64_t top = uniform_int(random, 0, image_height - h + 1);
      const int64_t left = uniform_int(random, 0, image_width - w + 1);
      return {top, left, h, w};
    }
  }
  // Fallback: the central crop with the allowed ratio nearest the image's.
  const double in_ratio = static_cast<double>(image_width) / static_cast<double>(image_height);
  int64_t w = image_width;
  int64_t h = image_height;
  if (in_ratio < ratio_[0]) {
    h = round_half_even(static_cast<double>(w) / ratio_[0]);
  } else if (in_ratio > ratio_[1]) {
    w = round_half_even(static_cast<double>(h) * ratio_[1]);
  }
  return {(image_height - h) / 2, (image_width - w) / 2, h, w};
}

Image RandomResizedCrop::crop_and_resize(const Image& image, const CropBox& box) const {
  return resize_bilinear(crop_image(image, box.top, box.left, box.height, box.width), height_, width_);
}

Image RandomResizedCrop::apply(Image image, SampleRandom& random) const {
  return crop_and_resize(image, sample_box(image.height, image.width, random));
}

DecodeRequest RandomResizedCrop::plan_decode(int64_t source_height, int64_t source_width, SampleRandom& random) const {
  const CropBox box = sample_box(source_height, source_width, random);
  return {box.top, box.left, box.height, box.width, 2 * height_, 2 * width_};
}

Image RandomResizedCrop::apply_planned(Image decoded, const DecodeRequest&, int64_t, int64_t, SampleRandom&) const {
  return resize_bilinear(decoded, height_, width_);  // the decoder already cropped
}

}  // namespace fulgur
