#pragma once

#include <fulgur/datamodules/images/image.hpp>

#include <cstdint>

// Deterministic pixel operations on 8-bit RGB images, the building blocks of
// the uint8 transforms. No LibTorch, no threads: callers run them in
// parallel on different images.
namespace fulgur {

/// The height x width window of `image` whose top-left corner is (top,
/// left); parts outside the image are 0 (torchvision's crop pads so too).
Image crop_image(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width);

/// Mirror image left <-> right.
Image flip_horizontal(Image image);

}  // namespace fulgur
