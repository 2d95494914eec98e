#include <fulgur/datamodules/images/codecs/decode_cascade.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace fulgur {

void DecodeCascade::add(DecodeEngine engine, Stage stage) {
  if (engine == DecodeEngine::None || !stage) {
    throw std::invalid_argument("[DecodeCascade::add] a stage needs an engine and a function");
  }
  stages_.emplace_back(engine, std::move(stage));
}

std::vector<DecodeEngine> DecodeCascade::run(size_t items) const {
  std::vector<DecodeEngine> engines(items, DecodeEngine::None);
  std::vector<size_t> left(items);
  for (size_t i = 0; i < items; ++i) left[i] = i;
  for (const auto& [engine, stage] : stages_) {
    if (left.empty()) break;
    const std::vector<bool> decoded = stage(left);
    if (decoded.size() != left.size()) {
      throw std::logic_error("[DecodeCascade::run] the " + to_string(engine) + " stage answered " +
                             std::to_string(decoded.size()) + " flags for " + std::to_string(left.size()) + " items");
    }
    std::vector<size_t> still;
    for (size_t k = 0; k < left.size(); ++k) {
      if (decoded[k]) {
        engines[left[k]] = engine;
      } else {
        still.push_back(left[k]);
      }
    }
    left = std::move(still);
  }
  return engines;
}

}  // namespace fulgur
