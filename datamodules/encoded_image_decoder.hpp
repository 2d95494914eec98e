#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace fulgur {

/// Decodes an encoded image in memory to uint8 [height, width, 3] RGB; the
/// one place the encoded-image datasets decode, so the format support can
/// grow (JPEG) without touching them. Today: PNG (decode_png). Errors throw
/// DataError naming `source`.
torch::Tensor decode_encoded_image(const uint8_t* data, size_t size, const std::string& source);

}  // namespace fulgur
