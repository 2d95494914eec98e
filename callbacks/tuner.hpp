#pragma once

#include <fulgur/callbacks/lr_finder.hpp>
#include <fulgur/datamodules/data_module.hpp>
#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/trainer/trainer_options.hpp>

#include <memory>

namespace fulgur {

/// Lightning's Tuner: searches that run short fits of their own and leave
/// the module as they found it.
///
///   fulgur::Tuner tuner(options);
///   auto finder = tuner.lr_find(model, data);
///   finder->write_csv("lr_find.csv");
///   double lr = finder->suggestion().value_or(0.01);
class Tuner {
 public:
  /// `options`: those of the fit to tune (accelerator, precision,
  /// accumulate_grad_batches, ...); each search changes what it must.
  explicit Tuner(TrainerOptions options) : options_(std::move(options)) {}

  /// The learning-rate range test: a fit of num_training_steps optimizer
  /// steps (over as many epochs as that takes; no validation, checkpoint,
  /// logger or progress bar) with an LRFinder. Afterwards the module's
  /// parameters and buffers and the CPU random generator are as before, and
  /// the next fit builds a fresh optimizer from configure_optimizers().
  std::shared_ptr<LRFinder> lr_find(LightningModule& module, DataModule& data, LRFinderOptions options = {});

 private:
  TrainerOptions options_;
};

}  // namespace fulgur
