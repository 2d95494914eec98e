#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Which hardware runs the math. Auto, the option's default, is Cuda when a
/// GPU is visible, else Cpu (TrainerConfig::resolve decides it).
enum class AcceleratorKind { Auto, Cpu, Cuda };

/// Lightning's names: "auto", "cpu", "gpu" (or "cuda").
inline std::vector<std::string> option_choices(AcceleratorKind) { return {"auto", "cpu", "gpu"}; }
inline std::vector<std::pair<std::string, AcceleratorKind>> option_aliases(AcceleratorKind) {
  return {{"cuda", AcceleratorKind::Cuda}};
}

}  // namespace fulgur
