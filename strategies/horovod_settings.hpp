#pragma once

#include <torch/arg.h>

#include <cstdint>
#include <optional>
#include <string>

namespace fulgur {

/// The user's knobs of the Horovod-style strategy (`--trainer.horovod.*`),
/// with Horovod's names and defaults. TrainerConfig::resolve validates them.
struct HorovodSettings {
  /// Gradients are fused into buffers of at most this many MiB (0 = no fusion).
  TORCH_ARG(double, fusion_threshold_mb) = 64.0;
  /// How often (ms) the ranks agree on which gradients are ready and reduce them.
  TORCH_ARG(double, cycle_time_ms) = 5.0;
  /// "none" or "fp16": gradients travel as float16.
  TORCH_ARG(std::string, compression) = "none";
  /// Local backward passes per communication (Horovod's name for
  /// accumulate_grad_batches; setting both to different values is an error).
  TORCH_ARG(int64_t, backward_passes_per_step) = 1;
  /// Seconds a rank may keep the others waiting before a warning names it.
  TORCH_ARG(double, stall_warning_s) = 60.0;
  /// Seconds after which a stall stops the run with an error (unset = never).
  TORCH_ARG(std::optional<double>, stall_shutdown_s) = std::nullopt;
  /// Send rank 0's optimizer state (and parameters again) to every rank
  /// once the optimizer exists.
  TORCH_ARG(bool, broadcast_optimizer_state) = true;
};

}  // namespace fulgur
