#pragma once

#include <ostream>
#include <string>

namespace fulgur {

/// Which engine decoded an image: the GPU's hardware JPEG engine, nvJPEG's
/// CUDA decoders (the hybrid one runs Huffman decoding on the CPU), or the
/// CPU (nvImageCodec's libjpeg-turbo backend or fulgur's own CPU path).
/// None: not decoded (yet).
enum class DecodeEngine { None, Hardware, Cuda, Cpu };

inline std::string to_string(DecodeEngine engine) {
  switch (engine) {
    case DecodeEngine::Hardware: return "hardware";
    case DecodeEngine::Cuda: return "cuda";
    case DecodeEngine::Cpu: return "cpu";
    case DecodeEngine::None: break;
  }
  return "none";
}

inline std::ostream& operator<<(std::ostream& out, DecodeEngine engine) { return out << to_string(engine); }

}  // namespace fulgur
