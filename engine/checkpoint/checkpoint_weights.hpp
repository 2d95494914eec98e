#pragma once

#include <fulgur/modules/hyperparameters.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <string>

namespace fulgur {

/// The whole checkpoint at `path`: a checkpoint file as written, or, for the
/// metadata file of a sharded checkpoint, the content with its shards
/// joined (what fulgur_consolidate writes). One process, no Trainer.
/// Throws CheckpointError naming the path.
Checkpoint load_whole_checkpoint(const std::filesystem::path& path);

/// The checkpoint's `state_dict` as name -> tensor; throws CheckpointError
/// naming `source` when it is missing or holds something else.
c10::Dict<std::string, torch::Tensor> checkpoint_weights(const Checkpoint& checkpoint, const std::string& source);

/// The hyper-parameters of the model: a command-line run saves its whole
/// configuration (trainer:, model:, data:, ...) and this is its `model`
/// section; a program's own save_hyperparameters(options) is taken whole.
HParams checkpoint_model_hparams(const Checkpoint& checkpoint);

/// Loads the checkpoint's weights into `module`, every key matching (strict,
/// see load_state_dict). Names may differ by ShardedUnit's wrapper: a model
/// trained with `blocks.0` wrapped (`blocks.0.module.fc.weight`) loads into
/// one without the wrapper (`blocks.0.fc.weight`) and the other way round.
/// Throws CheckpointError naming `source` and the first key that does not fit.
void load_checkpoint_weights(torch::nn::Module& module, const Checkpoint& checkpoint, const std::string& source);
/// The same from the file (full or sharded) at `path`.
void load_checkpoint_weights(torch::nn::Module& module, const std::filesystem::path& path);

}  // namespace fulgur
