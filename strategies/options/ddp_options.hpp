#pragma once

#include <fulgur/core/options.hpp>

namespace fulgur {

// clang-format off
#define FULGUR_DDP_OPTIONS(X)                                                                                  \
  X(bool, find_unused_parameters, false,                                                                      \
    "treat parameters without a gradient in a step as zero instead of an error (ddp and horovod)",          \
    fulgur::check::Any{})                                                                                     \
  X(double, bucket_cap_mb, 25.0,                                                                              \
    "gradient bucket size in MiB (torch DDP's bucket_cap_mb); the first bucket is 1 MiB", fulgur::check::Positive{}) \
  X(bool, broadcast_buffers, true, "copy rank 0's buffers (BatchNorm statistics) before every training step", \
    fulgur::check::Any{})
// clang-format on

/// The user's knobs of the ddp strategy (`--trainer.ddp.*`), with torch
/// DDP's names and defaults.
struct DDPOptions {
  FULGUR_OPTIONS(DDPOptions, FULGUR_DDP_OPTIONS)
};

}  // namespace fulgur
