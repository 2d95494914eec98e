#pragma once

#include <cstdint>

namespace fulgur {

/// Seeds every generator a run draws from (torch CPU and CUDA, std::rand),
/// so that loaders built afterwards shuffle the same way each run.
/// Returns the seed.
uint64_t seed_everything(uint64_t seed);

}  // namespace fulgur
