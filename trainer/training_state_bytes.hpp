#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/strategies/strategy.hpp>

#include <cstdint>
#include <vector>

namespace fulgur {

/// Bytes this rank keeps for the model's training state: the parameters'
/// storage, their gradients, what the strategy's gradient path holds
/// (DDP buckets, gradient shards) and the optimizers' state tensors, each
/// storage counted once. What sharding divides: compare strategies with it
/// between steps.
int64_t training_state_bytes(const Strategy& strategy, torch::nn::Module& module,
                             const std::vector<OptimizerConfig>& optimizers);

}  // namespace fulgur
