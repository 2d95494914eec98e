#include <fulgur/datamodules/images/transforms/resize.hpp>

#include <fulgur/datamodules/images/transforms/image_resize.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

Resize::Resize(int64_t shorter_side) : shorter_side_(shorter_side) {
  if (shorter_side < 1) {
    throw std::invalid_argument("[Resize::Resize] size must be positive, got " + std::to_string(shorter_side));
  }
}

Resize::Resize(int64_t height, int64_t width) : height_(height), width_(width) {
  if (height < 1 || width < 1) {
    throw std::invalid_argument("[Resize::Resize] size must be positive, got " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
}

std::pair<int64_t, int64_t> Resize::output_size(int64_t height, int64_t width) const {
  if (shorter_side_ == 0) return {height_, width_};
  const bool portrait = width <= height;
  const int64_t shorter = portrait ? width : height;
  const int64_t longer = portrait ? height : width;
  // int(size * long / short) in Python: true division, then truncation.
  const auto new_longer = static_cast<int64_t>(static_cast<double>(shorter_side_ * longer) / static_cast<double>(shorter));
  return portrait ? std::pair{new_longer, shorter_side_} : std::pair{shorter_side_, new_longer};
}

Image Resize::apply(Image image, SampleRandom&) const {
  const auto [height, width] = output_size(image.height, image.width);
  if (height == image.height && width == image.width) return image;
  return resize_bilinear(image, height, width);
}

DecodeRequest Resize::plan_decode(int64_t source_height, int64_t source_width, SampleRandom&) const {
  const auto [height, width] = output_size(source_height, source_width);
  return {0, 0, 0, 0, 2 * height, 2 * width};
}

Image Resize::apply_planned(Image decoded, const DecodeRequest&, int64_t source_height, int64_t source_width,
                            SampleRandom&) const {
  // The size follows the source, not the (maybe DCT-scaled) decoded image.
  const auto [height, width] = output_size(source_height, source_width);
  if (height == decoded.height && width == decoded.width) return decoded;
  return resize_bilinear(decoded, height, width);
}

}  // namespace fulgur
