#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// The arithmetic of training: float32, or autocast to bfloat16 or float16.
enum class PrecisionMode { Full32, BF16Mixed, FP16Mixed };

/// Lightning's names: "32-true", "bf16-mixed", "16-mixed", and its short
/// spellings "32", "bf16", "16" for the same (Lightning's alias table).
inline std::vector<std::string> option_choices(PrecisionMode) { return {"32-true", "bf16-mixed", "16-mixed"}; }
inline std::vector<std::pair<std::string, PrecisionMode>> option_aliases(PrecisionMode) {
  return {{"32", PrecisionMode::Full32}, {"bf16", PrecisionMode::BF16Mixed}, {"16", PrecisionMode::FP16Mixed}};
}

}  // namespace fulgur
