#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// How gradients travel between the ranks: as they are, or as float16.
enum class HorovodCompression { None, FP16 };
inline std::vector<std::string> option_choices(HorovodCompression) { return {"none", "fp16"}; }

// clang-format off
#define FULGUR_HOROVOD_OPTIONS(X)                                                                              \
  X(double, fusion_threshold_mb, 64.0, "gradients are fused into buffers of at most this many MiB (0 = no fusion)", \
    fulgur::check::AtLeast{0})                                                                                \
  X(double, cycle_time_ms, 5.0, "how often (ms) the ranks agree on which gradients are ready and reduce them",  \
    fulgur::check::Positive{})                                                                                \
  X(fulgur::HorovodCompression, compression, fulgur::HorovodCompression::None,                                \
    "none, or fp16: gradients travel as float16", fulgur::check::Any{})                                        \
  X(int64_t, backward_passes_per_step, 1,                                                                     \
    "local backward passes per communication (Horovod's accumulate_grad_batches)", fulgur::check::AtLeast{1}) \
  X(double, stall_warning_s, 60.0, "seconds a rank may keep the others waiting before a warning names it",     \
    fulgur::check::Positive{})                                                                                \
  X(std::optional<double>, stall_shutdown_s, std::nullopt,                                                    \
    "seconds after which a stall stops the run with an error (null = never)", fulgur::check::Positive{})       \
  X(bool, broadcast_optimizer_state, true,                                                                    \
    "send rank 0's optimizer state (and parameters again) to every rank once the optimizer exists",           \
    fulgur::check::Any{})
// clang-format on

/// The user's knobs of the Horovod-style strategy (`--trainer.horovod.*`),
/// with Horovod's names and defaults.
struct HorovodOptions {
  FULGUR_OPTIONS(HorovodOptions, FULGUR_HOROVOD_OPTIONS)
};

}  // namespace fulgur
