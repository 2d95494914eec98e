#pragma once

#include <fulgur/strategies/process_group.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/trainer_config.hpp>

#include <memory>

namespace fulgur {

/// The Strategy (with its Accelerator and Precision) a resolved config asks
/// for, on the processes the platform describes.
std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config, const Platform& platform);

/// Where the processes `env` describes meet (store address or file, rank,
/// world size), with collectives failing after `timeout_s` seconds.
ProcessGroupOptions process_group_options(const ClusterEnvironment& env, double timeout_s);

}  // namespace fulgur
