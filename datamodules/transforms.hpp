#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

// Per-sample image transforms shared by the image datasets. They are pure
// functions of their arguments, so loader threads can run them concurrently.
namespace fulgur {

/// uint8 [H, W, C] -> float [C, H, W] in [0, 1] (torchvision's ToTensor).
torch::Tensor to_float_chw(const torch::Tensor& image_hwc_uint8);

/// (x - mean[c]) / std[c] for each channel c of a float [C, H, W] image;
/// mean and std have one entry per channel.
torch::Tensor normalize_chw(const torch::Tensor& image_chw, const std::vector<double>& mean,
                            const std::vector<double>& std);

/// Shifts a [H, W, C] image: out[y][x] = image[y + dy][x + dx], and 0 where
/// that falls outside the image.
torch::Tensor translate_hwc(const torch::Tensor& image_hwc, int64_t dy, int64_t dx);

/// torchvision's RandomCrop(size, padding=p) with zero fill, on a [H, W, C]
/// image: p = max(1, side / 8) per axis (12.5%), shift uniform in [-p, p].
torch::Tensor random_translate_hwc(const torch::Tensor& image_hwc, torch::Generator& generator);

/// A seed for one sample's random augmentation that depends only on the
/// loader seed, the epoch and the sample index, so results do not depend on
/// which worker thread draws them, and differ between epochs.
uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t index);

}  // namespace fulgur
