#pragma once

#include <ATen/core/Dict.h>
#include <torch/torch.h>

#include <string>

namespace fulgur {

class Strategy;

/// Whole weights (any world size wrote them) as this rank holds them: under
/// a strategy that shards parameters (fsdp FULL_SHARD), this rank's rows of
/// each parameter of `module`; else `whole` itself. For every front end's
/// load (the Trainer's CheckpointConnector, Fabric).
c10::Dict<std::string, torch::Tensor> local_weights(const Strategy& strategy, const torch::nn::Module& module,
                                                    c10::Dict<std::string, torch::Tensor> whole);

/// Loads a whole optimizer state (optimizer_state_dict's layout) into
/// `optimizer`: under a strategy that shards optimizer state (fsdp), each
/// state tensor's rows this rank keeps. Throws std::invalid_argument naming
/// what does not match (load_optimizer_state_dict).
void load_local_optimizer_state(const Strategy& strategy, torch::optim::Optimizer& optimizer,
                                const c10::impl::GenericDict& whole);

}  // namespace fulgur
