#pragma once

#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/image.hpp>

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace fulgur {

/// Decodes a JPEG or PNG held in memory (format sniffed from its magic
/// bytes, never from a name) into a uint8 tensor [height, width, 3], RGB.
/// `source_name` (a path, a shard key) names the source in errors: every
/// failure throws DataError "[decode_image] '<source_name>': <reason>".
/// Conversions to RGB are described in docs/data.md ("Images: decoding and
/// transforms"); EXIF orientation is ignored, as torchvision ignores it.
torch::Tensor decode_image(const uint8_t* data, size_t size, const std::string& source_name);

/// decode_image() of a file's bytes; unreadable files throw DataError
/// "[read_image] '<path>': <reason>" (see read_image_bytes()).
torch::Tensor read_image(const std::filesystem::path& path);

/// Wraps an Image in a uint8 [height, width, 3] tensor that takes over its
/// buffer (no copy).
torch::Tensor image_to_tensor(Image image);

/// A uint8 [height, width, 3] tensor as an Image (one copy). Throws
/// std::invalid_argument for any other dtype or shape.
Image tensor_to_image(const torch::Tensor& image_hwc_uint8);

}  // namespace fulgur
