#pragma once

#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/trainer/trainer_config.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// The checks every runner makes on what configure_optimizers returned —
/// the Trainer's fit and Fabric::setup alike — before anything steps:
/// each entry has an optimizer, each scheduler config is whole (one of
/// scheduler or plateau, a plateau's monitor, frequency >= 1); with
/// `automatic` (the Trainer's automatic optimization) one optimizer only;
/// with manual optimization, no accumulate_grad_batches and no
/// gradient_clip_val. Throws std::invalid_argument prefixed with `who`
/// ("[Trainer::fit]", "[Fabric::setup]").
void check_optimizer_configs(const std::vector<OptimizerConfig>& entries, bool automatic, bool manual,
                             const TrainerConfig& config, const std::string& who);

/// A GradientAccumulationScheduler may raise accumulate_grad_batches during
/// a fit: manual optimization refuses anything but 1 (`who` prefixes).
void check_manual_accumulation(int64_t accumulate_grad_batches, const std::string& who);

}  // namespace fulgur
