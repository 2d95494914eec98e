#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/modules/optimizer_config.hpp>
#include <fulgur/strategies/precision.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <cstdint>
#include <vector>

namespace fulgur {

/// What every fulgur checkpoint holds of a training, with the Trainer's
/// (Lightning's) keys — the one writer of them, for the Trainer's
/// CheckpointConnector and for Fabric (so the online trainer): the version,
/// `epoch`, `global_step`, the weights (`state_dict`), `hyper_parameters`,
/// and unless `weights_only`, `optimizer_states`, `lr_schedulers` (one per
/// scheduler, in the optimizers' order) and the precision's scaler
/// (`precision`). Tensors are the live ones, detached (CheckpointIO copies
/// them when it writes).
Checkpoint training_checkpoint(const LightningModule& module, const std::vector<OptimizerConfig>& optimizers,
                               const Precision& precision, int64_t epoch, int64_t global_step, bool weights_only);

}  // namespace fulgur
