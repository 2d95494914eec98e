// NvImageCodecDecoder in a build without nvimgcodec.h (the
// nvidia-nvimgcodec-cu13 wheel was not in the venv when CMake ran): the
// class exists so that every caller compiles unchanged, and it reports
// itself unavailable, so `decode: auto` picks the CPU path.
#include <fulgur/datamodules/images/codecs/nvimgcodec_decoder.hpp>

#include <stdexcept>

namespace fulgur {

namespace {

const char* const kWithout =
    "fulgur was built without nvImageCodec (nvimgcodec.h was not found when CMake ran); install the "
    "nvidia-nvimgcodec-cu13 wheel into the venv (scripts/requirements.txt) and configure again";

}  // namespace

struct NvImageCodecDecoder::State {};

std::optional<std::string> NvImageCodecDecoder::unavailable_reason() { return std::string(kWithout); }

NvImageCodecDecoder::NvImageCodecDecoder(Backend backend, int, int, int) : backend_(backend) {
  throw std::runtime_error(std::string("[NvImageCodecDecoder] ") + kWithout);
}

NvImageCodecDecoder::~NvImageCodecDecoder() = default;

std::vector<DecodeEngine> NvImageCodecDecoder::decode(const std::vector<BatchDecodeItem>& items, void*) {
  return std::vector<DecodeEngine>(items.size(), DecodeEngine::None);
}

bool NvImageCodecDecoder::has_hardware_decoder() const { return false; }

}  // namespace fulgur
