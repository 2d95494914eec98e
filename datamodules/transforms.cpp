#include <fulgur/datamodules/transforms.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

// SplitMix64 finaliser: a bijective mixer, so nearby (epoch, index) pairs
// give unrelated generator seeds.
uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

}  // namespace

torch::Tensor to_float_chw(const torch::Tensor& image_hwc_uint8) {
  if (image_hwc_uint8.dim() != 3) {
    throw std::invalid_argument("[to_float_chw] expected a [height, width, channels] image, got " +
                                std::to_string(image_hwc_uint8.dim()) + " dimensions");
  }
  // One pass: convert and lay out contiguously together, then scale in place.
  return image_hwc_uint8.permute({2, 0, 1})
      .to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/false, torch::MemoryFormat::Contiguous)
      .div_(255.0f);
}

torch::Tensor normalize_chw(const torch::Tensor& image_chw, const std::vector<double>& mean,
                            const std::vector<double>& std) {
  const auto channels = image_chw.dim() == 3 ? image_chw.size(0) : -1;
  if (channels < 0 || static_cast<int64_t>(mean.size()) != channels || static_cast<int64_t>(std.size()) != channels) {
    throw std::invalid_argument("[normalize_chw] image has " + std::to_string(channels) + " channels (" +
                                std::to_string(image_chw.dim()) + " dimensions) but mean has " +
                                std::to_string(mean.size()) + " and std " + std::to_string(std.size()) + " entries");
  }
  const auto options = torch::TensorOptions().dtype(image_chw.scalar_type()).device(image_chw.device());
  const torch::Tensor mean_t = torch::tensor(mean, torch::kFloat64).to(options).view({channels, 1, 1});
  const torch::Tensor std_t = torch::tensor(std, torch::kFloat64).to(options).view({channels, 1, 1});
  return (image_chw - mean_t) / std_t;
}

torch::Tensor translate_hwc(const torch::Tensor& image_hwc, int64_t dy, int64_t dx) {
  const int64_t height = image_hwc.size(0);
  const int64_t width = image_hwc.size(1);
  torch::Tensor out = torch::zeros_like(image_hwc);
  // Rows y of `out` with 0 <= y + dy < height are covered; likewise columns.
  const int64_t y0 = std::max<int64_t>(0, -dy), y1 = std::min(height, height - dy);
  const int64_t x0 = std::max<int64_t>(0, -dx), x1 = std::min(width, width - dx);
  if (y0 < y1 && x0 < x1) {
    out.slice(0, y0, y1).slice(1, x0, x1).copy_(image_hwc.slice(0, y0 + dy, y1 + dy).slice(1, x0 + dx, x1 + dx));
  }
  return out;
}

torch::Tensor random_translate_hwc(const torch::Tensor& image_hwc, torch::Generator& generator) {
  const int64_t pad_y = std::max<int64_t>(1, image_hwc.size(0) / 8);
  const int64_t pad_x = std::max<int64_t>(1, image_hwc.size(1) / 8);
  const int64_t dy = torch::randint(-pad_y, pad_y + 1, {1}, generator, torch::kLong).item<int64_t>();
  const int64_t dx = torch::randint(-pad_x, pad_x + 1, {1}, generator, torch::kLong).item<int64_t>();
  return translate_hwc(image_hwc, dy, dx);
}

uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t index) {
  return mix(mix(mix(seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(index));
}

}  // namespace fulgur
