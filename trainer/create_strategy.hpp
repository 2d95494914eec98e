#pragma once

#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/trainer_config.hpp>

#include <memory>

namespace fulgur {

/// The Strategy (with its Accelerator and Precision) a resolved config asks
/// for, on the processes the platform describes.
std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config, const Platform& platform);

}  // namespace fulgur
