#pragma once

#include <fulgur/strategies/horovod_settings.hpp>
#include <fulgur/trainer/count_or_fraction.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur {

/// What the user asks of a Trainer, with Lightning's names and defaults.
/// Chainable setters in the torch::nn options style:
///
///   TrainerOptions().max_epochs(10).accelerator("gpu").devices(4).num_nodes(16)
///
/// Nothing is checked here; TrainerConfig::resolve() validates everything
/// once, before the Trainer has any side effect.
struct TrainerOptions {
  /// -1 = no limit; unset = 1000 unless max_steps is set (Lightning's rule).
  TORCH_ARG(std::optional<int64_t>, max_epochs) = std::nullopt;
  /// Optimizer steps; -1 = no limit.
  TORCH_ARG(int64_t, max_steps) = -1;
  TORCH_ARG(int64_t, min_epochs) = 0;
  /// "auto", "cpu", "gpu" (or "cuda").
  TORCH_ARG(std::string, accelerator) = "auto";
  /// "auto", or a positive count as a string; devices(int) is the usual form.
  TORCH_ARG(std::string, devices) = "auto";
 public:
  TrainerOptions& devices(int64_t count) {
    devices_ = std::to_string(count);
    return *this;
  }
  TORCH_ARG(int64_t, num_nodes) = 1;
  /// "auto" (single_device when the world size is 1, else ddp), "single_device",
  /// "ddp", "horovod".
  TORCH_ARG(std::string, strategy) = "auto";
  /// "32-true" (alias "32"), "bf16-mixed", "16-mixed" (GPU only).
  TORCH_ARG(std::string, precision) = "32-true";
  TORCH_ARG(int64_t, accumulate_grad_batches) = 1;
  TORCH_ARG(std::optional<double>, gradient_clip_val) = std::nullopt;
  /// "norm" (total 2-norm over all parameters) or "value" (element-wise clamp).
  TORCH_ARG(std::string, gradient_clip_algorithm) = "norm";
  /// Fraction of the training epoch (0.25 = four times per epoch) or a batch count.
  TORCH_ARG(CountOrFraction, val_check_interval) = 1.0;
  /// Validate every n epochs; nullopt validates by val_check_interval across epochs.
  TORCH_ARG(std::optional<int64_t>, check_val_every_n_epoch) = 1;
  TORCH_ARG(CountOrFraction, limit_train_batches) = 1.0;
  TORCH_ARG(CountOrFraction, limit_val_batches) = 1.0;
  TORCH_ARG(CountOrFraction, limit_test_batches) = 1.0;
  TORCH_ARG(CountOrFraction, limit_predict_batches) = 1.0;
  /// 0 = off; n runs n batches of every loop once, without logging.
  TORCH_ARG(int64_t, fast_dev_run) = 0;
  /// Validation batches run before training to catch bugs early; -1 = all.
  TORCH_ARG(int64_t, num_sanity_val_steps) = 2;
  TORCH_ARG(int64_t, log_every_n_steps) = 50;
  TORCH_ARG(bool, deterministic) = false;
  TORCH_ARG(bool, benchmark) = false;
  TORCH_ARG(std::string, default_root_dir) = ".";
  TORCH_ARG(bool, enable_progress_bar) = true;
  /// Adds a default ModelCheckpoint (checkpoints/last.ckpt in the run folder)
  /// unless one is given.
  TORCH_ARG(bool, enable_checkpointing) = true;
  /// Writes the run folder (hparams.yaml, metrics.csv) when true.
  TORCH_ARG(bool, logger) = true;

  // --- distributed (strategy ddp) ---
  /// Seconds a collective may wait for a peer before the run fails.
  TORCH_ARG(double, process_group_timeout) = 1800.0;
  /// This machine's index when fulgur's launcher starts several nodes.
  TORCH_ARG(int64_t, node_rank) = 0;
  /// Treat parameters without a gradient in a step as zero instead of an error.
  TORCH_ARG(bool, find_unused_parameters) = false;
  /// Gradient bucket size in MiB (torch DDP's bucket_cap_mb); the first
  /// bucket is 1 MiB so communication starts early.
  TORCH_ARG(double, bucket_cap_mb) = 25.0;
  /// Copy rank 0's buffers (BatchNorm statistics) before every training step.
  TORCH_ARG(bool, broadcast_buffers) = true;
  /// Give each process its share of the data (DatasetLoader::shard).
  TORCH_ARG(bool, use_distributed_sampler) = true;
  /// Chrome-trace JSON of every gradient collective (ddp, horovod); "" = off.
  TORCH_ARG(std::string, timeline) = "";
  /// Strategy horovod: fusion, cycle time, compression, stall inspection.
  TORCH_ARG(HorovodSettings, horovod) = {};
};

}  // namespace fulgur
