#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace fulgur {

/// Reads a PNG file into a uint8 tensor of shape [height, width, 3] (RGB).
/// Every PNG colour type and bit depth is accepted and converted to 8-bit
/// RGB: grey is replicated to three channels, palettes are expanded, alpha
/// is dropped (not composited), 16-bit samples keep their high byte. No
/// gamma or colour-profile conversion is applied. A missing, non-PNG,
/// truncated or corrupt file throws DataError (a std::runtime_error)
/// starting "[read_png]" and naming the path; it never crashes the process.
torch::Tensor read_png(const std::filesystem::path& path);

/// read_png() for a PNG already in memory (a packed shard, say); `name`
/// stands for the source in error messages, which start "[decode_png]".
torch::Tensor decode_png(const uint8_t* data, size_t size, const std::string& name);

/// Writes a uint8 [height, width, channels] tensor (channels 1 = grey,
/// 3 = RGB) as an 8-bit PNG. Errors throw std::runtime_error starting
/// "[write_png]"; a partly written file is removed.
void write_png(const std::filesystem::path& path, const torch::Tensor& hwc_uint8);

}  // namespace fulgur
