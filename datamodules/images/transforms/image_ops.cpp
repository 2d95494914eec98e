#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fulgur {

Image crop_image(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  if (height < 1 || width < 1) {
    throw std::invalid_argument("[crop_image] crop size must be positive, got " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
  Image out(height, width);
  const int64_t x_begin = std::clamp<int64_t>(-left, 0, width);
  const int64_t x_end = std::clamp<int64_t>(image.width - left, 0, width);
  for (int64_t y = 0; y < height; ++y) {
    uint8_t* dst = out.row(y);
    const int64_t source_y = top + y;
    if (source_y < 0 || source_y >= image.height || x_begin >= x_end) {
      std::memset(dst, 0, static_cast<size_t>(width) * 3);
      continue;
    }
    std::memset(dst, 0, static_cast<size_t>(x_begin) * 3);
    std::memcpy(dst + x_begin * 3, image.row(source_y) + (left + x_begin) * 3, static_cast<size_t>(x_end - x_begin) * 3);
    std::memset(dst + x_end * 3, 0, static_cast<size_t>(width - x_end) * 3);
  }
  return out;
}

Image flip_horizontal(Image image) {
  for (int64_t y = 0; y < image.height; ++y) {
    uint8_t* row = image.row(y);
    for (int64_t a = 0, b = image.width - 1; a < b; ++a, --b) {
      for (int c = 0; c < 3; ++c) std::swap(row[a * 3 + c], row[b * 3 + c]);
    }
  }
  return image;
}

}  // namespace fulgur
