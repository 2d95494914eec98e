#pragma once

#include <fulgur/engine/checkpoint/checkpoint_weights.hpp>
#include <fulgur/trainer/cli/options_yaml.hpp>
#include <fulgur/trainer/hparams_yaml.hpp>

#include <filesystem>
#include <memory>

namespace fulgur {

/// Lightning's `Model.load_from_checkpoint(path)` in C++, on one process and
/// without a Trainer: rebuilds the module from the hyper-parameters the
/// checkpoint saved and loads its weights from a full or sharded checkpoint
/// (see load_checkpoint_weights), then puts it in eval mode on the CPU.
/// A Model with `using Options = ...` (FULGUR_OPTIONS) is built as
/// `Model(options)` from its saved options: the `model:` section of a
/// command-line run, or what `save_hyperparameters(options)` recorded (a
/// field missing there takes its default; a saved key the struct no longer
/// has is a ConfigError naming it). Any other Model is default-constructed.
/// Throws CheckpointError naming the file when it cannot be read or its
/// weights do not fit.
///
///   auto model = fulgur::load_from_checkpoint<MyModel>("runs/fulgur_logs/version_0/checkpoints/last.ckpt");
template <class Model>
std::shared_ptr<Model> load_from_checkpoint(const std::filesystem::path& path) {
  const Checkpoint checkpoint = load_whole_checkpoint(path);
  std::shared_ptr<Model> model;
  if constexpr (requires { typename Model::Options; }) {
    cli::ConfigSection section(hparams_to_yaml(checkpoint_model_hparams(checkpoint)), "hyper_parameters");
    model = std::make_shared<Model>(cli::read_options<typename Model::Options>(section));
  } else {
    model = std::make_shared<Model>();
  }
  load_checkpoint_weights(*model, checkpoint, path.string());
  model->eval();
  return model;
}

}  // namespace fulgur
