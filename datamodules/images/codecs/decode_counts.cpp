#include <fulgur/datamodules/images/codecs/decode_counts.hpp>

namespace fulgur {

void DecodeCounts::add(DecodeEngine engine) {
  switch (engine) {
    case DecodeEngine::Hardware: ++hardware; break;
    case DecodeEngine::Cuda: ++cuda; break;
    case DecodeEngine::Cpu: ++cpu; break;
    case DecodeEngine::None: break;
  }
}

void DecodeCounts::add_fallback() {
  ++cpu;
  ++fallback;
}

DecodeCounts& DecodeCounts::operator+=(const DecodeCounts& other) {
  hardware += other.hardware;
  cuda += other.cuda;
  cpu += other.cpu;
  fallback += other.fallback;
  return *this;
}

std::string DecodeCounts::to_string() const {
  return "hardware " + std::to_string(hardware) + ", cuda " + std::to_string(cuda) + ", cpu " + std::to_string(cpu) +
         " (" + std::to_string(fallback) + " one by one)";
}

}  // namespace fulgur
