#pragma once

#include <fulgur/callbacks/lr_finder.hpp>
#include <fulgur/callbacks/scale_batch_size_options.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/strategies/launchers/subprocess_launcher.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <cstdint>
#include <memory>

namespace fulgur {

/// Lightning's Tuner: searches that run short fits of their own and leave
/// the module as they found it: its parameters and buffers and the CPU
/// random generator are as before, and the next fit builds a fresh
/// optimizer from configure_optimizers().
///
///   fulgur::Tuner tuner(options);
///   auto finder = tuner.lr_find(model, data);
///   finder->write_csv("lr_find.csv");
///   double lr = finder->suggestion().value_or(0.01);
///   int64_t batch_size = tuner.scale_batch_size(model, data, fulgur::ScaleBatchSizeOptions().max_val(512));
class Tuner {
 public:
  /// `options`: those of the fit to tune (accelerator, precision,
  /// accumulate_grad_batches, ...); each search changes what it must.
  /// `launcher`: the program's, which the search's Trainers share with the
  /// program's others (null: each Trainer makes its own).
  explicit Tuner(TrainerOptions options, std::shared_ptr<SubprocessLauncher> launcher = nullptr)
      : options_(std::move(options)), launcher_(std::move(launcher)) {}

  /// The learning-rate range test: a fit of num_training_steps optimizer
  /// steps (over as many epochs as that takes; no validation, checkpoint, logger,
  /// progress bar or model summary) with an LRFinder.
  std::shared_ptr<LRFinder> lr_find(LightningModule& module, DataModule& data, LRFinderOptions options = {}) const;

  /// The largest batch size that trains: trial fits of steps_per_trial
  /// optimizer steps (validation limited to as many batches; no checkpoint,
  /// logger, progress bar or summary) from init_val, doubling after each trial that
  /// ran (power) and then, in binsearch, bisecting between the last size
  /// that ran and the first that failed. A trial fails on a CUDA
  /// out-of-memory error, or when its size is above max_val (required on
  /// the CPU); sizes never go beyond the training set. Returns the size
  /// found and leaves it set in the data module (its batch_arg_name option,
  /// DataModule::batch_arg), as Lightning does. One process only.
  int64_t scale_batch_size(LightningModule& module, DataModule& data, ScaleBatchSizeOptions options = {}) const;

 private:
  TrainerOptions options_;
  std::shared_ptr<SubprocessLauncher> launcher_;
};

}  // namespace fulgur
