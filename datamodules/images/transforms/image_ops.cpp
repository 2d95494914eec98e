#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace fulgur {

namespace {

// Fixed-point weights as in Pillow (Resample.c): 22 fractional bits leave
// room for 8-bit samples times weights summing to 1, plus sign and carry.
constexpr int kPrecisionBits = 32 - 8 - 2;

// For each output sample, the first input sample it reads and its weights.
struct ResampleTaps {
  int64_t taps_per_output = 0;
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<int32_t> weights;  // taps_per_output per output sample
};

// Triangle filter stretched by the reduction factor: averages all input
// samples an output sample covers instead of aliasing.
ResampleTaps bilinear_taps(int64_t in_size, int64_t out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  ResampleTaps taps;
  taps.taps_per_output = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<size_t>(out_size));
  taps.count.resize(static_cast<size_t>(out_size));
  taps.weights.assign(static_cast<size_t>(out_size * taps.taps_per_output), 0);
  std::vector<double> w(static_cast<size_t>(taps.taps_per_output));
  for (int64_t o = 0; o < out_size; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    const int64_t first = std::max<int64_t>(0, static_cast<int64_t>(center - support + 0.5));
    const int64_t last = std::min<int64_t>(in_size, static_cast<int64_t>(center + support + 0.5));
    const int64_t count = last - first;
    const double inverse_scale = 1.0 / filter_scale;
    double total = 0;
    for (int64_t i = 0; i < count; ++i) {
      const double x = std::abs((static_cast<double>(i + first) - center + 0.5) * inverse_scale);
      w[static_cast<size_t>(i)] = x < 1.0 ? 1.0 - x : 0.0;
      total += w[static_cast<size_t>(i)];
    }
    int32_t* k = &taps.weights[static_cast<size_t>(o * taps.taps_per_output)];
    for (int64_t i = 0; i < count; ++i) {
      const double normalised = total != 0.0 ? w[static_cast<size_t>(i)] / total : w[static_cast<size_t>(i)];
      const double fixed = normalised * (1 << kPrecisionBits);
      k[i] = static_cast<int32_t>(normalised < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    taps.first[static_cast<size_t>(o)] = first;
    taps.count[static_cast<size_t>(o)] = count;
  }
  return taps;
}

inline uint8_t clip8(int32_t value) {
  if (value >= (1 << kPrecisionBits << 8)) return 255;
  if (value <= 0) return 0;
  return static_cast<uint8_t>(value >> kPrecisionBits);
}

// Horizontal pass over rows [row_begin, row_begin + out.height) of `in`.
void resample_rows(const Image& in, int64_t row_begin, const ResampleTaps& taps, Image& out) {
  for (int64_t y = 0; y < out.height; ++y) {
    const uint8_t* src = in.row(row_begin + y);
    uint8_t* dst = out.row(y);
    for (int64_t x = 0; x < out.width; ++x) {
      const int32_t* k = &taps.weights[static_cast<size_t>(x * taps.taps_per_output)];
      const uint8_t* p = src + taps.first[static_cast<size_t>(x)] * 3;
      int32_t r = 1 << (kPrecisionBits - 1), g = r, b = r;
      for (int64_t i = 0, n = taps.count[static_cast<size_t>(x)]; i < n; ++i, p += 3) {
        r += p[0] * k[i];
        g += p[1] * k[i];
        b += p[2] * k[i];
      }
      dst[x * 3 + 0] = clip8(r);
      dst[x * 3 + 1] = clip8(g);
      dst[x * 3 + 2] = clip8(b);
    }
  }
}

// Vertical pass: output row y mixes input rows first[y] - row_offset ...
void resample_columns(const Image& in, int64_t row_offset, const ResampleTaps& taps, Image& out) {
  const int64_t values = out.width * 3;
  std::vector<int32_t> sums(static_cast<size_t>(values));
  for (int64_t y = 0; y < out.height; ++y) {
    std::fill(sums.begin(), sums.end(), 1 << (kPrecisionBits - 1));
    const int32_t* k = &taps.weights[static_cast<size_t>(y * taps.taps_per_output)];
    const int64_t first = taps.first[static_cast<size_t>(y)] - row_offset;
    for (int64_t i = 0, n = taps.count[static_cast<size_t>(y)]; i < n; ++i) {
      const uint8_t* src = in.row(first + i);
      const int32_t weight = k[i];
      for (int64_t v = 0; v < values; ++v) sums[static_cast<size_t>(v)] += src[v] * weight;
    }
    uint8_t* dst = out.row(y);
    for (int64_t v = 0; v < values; ++v) dst[v] = clip8(sums[static_cast<size_t>(v)]);
  }
}

}  // namespace

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

Image resize_bilinear(const Image& image, int64_t height, int64_t width) {
  if (height < 1 || width < 1 || image.height < 1 || image.width < 1) {
    throw std::invalid_argument("[resize_bilinear] cannot resize " + std::to_string(image.height) + "x" +
                                std::to_string(image.width) + " to " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
  if (height == image.height && width == image.width) return crop_image(image, 0, 0, height, width);
  const ResampleTaps rows = bilinear_taps(image.height, height);
  // Horizontal first, over only the rows the vertical pass reads (as Pillow).
  if (width != image.width) {
    const int64_t first_row = rows.first.front();
    const int64_t end_row = rows.first.back() + rows.count.back();
    Image narrow(end_row - first_row, width);
    resample_rows(image, first_row, bilinear_taps(image.width, width), narrow);
    if (height == image.height) return narrow;
    Image out(height, width);
    resample_columns(narrow, first_row, rows, out);
    return out;
  }
  Image out(height, width);
  resample_columns(image, 0, rows, out);
  return out;
}

}  // namespace fulgur
