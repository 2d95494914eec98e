#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace fulgur {

/// An 8-bit RGB image, rows top to bottom, pixels interleaved (HWC). It is
/// the currency of the decoders and the uint8 transforms, which need no
/// LibTorch (so the fuzz target builds in seconds); image_to_tensor()
/// (codecs/image_tensor.hpp) wraps one in a tensor without copying. The buffer is
/// left uninitialised on creation: every producer writes every byte. It is
/// malloc'd so the C decoders can fill a buffer that an Image then adopts.
struct Image {
  struct Free {
    void operator()(uint8_t* pointer) const { std::free(pointer); }
  };

  int64_t height = 0;
  int64_t width = 0;
  std::unique_ptr<uint8_t, Free> pixels;

  Image() = default;
  Image(int64_t height_, int64_t width_) : height(height_), width(width_), pixels(allocate(bytes())) {}

  static uint8_t* allocate(size_t bytes) {
    auto* pointer = static_cast<uint8_t*>(std::malloc(bytes ? bytes : 1));
    if (!pointer) throw std::bad_alloc();
    return pointer;
  }

  size_t bytes() const { return static_cast<size_t>(height) * static_cast<size_t>(width) * 3; }
  uint8_t* row(int64_t y) { return pixels.get() + static_cast<size_t>(y) * static_cast<size_t>(width) * 3; }
  const uint8_t* row(int64_t y) const { return pixels.get() + static_cast<size_t>(y) * static_cast<size_t>(width) * 3; }
};

}  // namespace fulgur
