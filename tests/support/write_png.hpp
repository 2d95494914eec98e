#pragma once

#include <torch/torch.h>

#include <filesystem>

namespace fulgur::testing {

/// Writes a uint8 [height, width, channels] tensor (channels 1 = grey,
/// 3 = RGB) as an 8-bit PNG, for the image tests' fixtures. Errors throw
/// std::runtime_error starting "[write_png]"; a partly written file is removed.
void write_png(const std::filesystem::path& path, const torch::Tensor& hwc_uint8);

}  // namespace fulgur::testing
