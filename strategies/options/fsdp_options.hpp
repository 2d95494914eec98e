#pragma once

#include <fulgur/modules/options.hpp>

#include <string>

namespace fulgur {

// clang-format off
#define FULGUR_FSDP_OPTIONS(X)                                                                                 \
  X(std::string, sharding_strategy, "FULL_SHARD",                                                             \
    "FULL_SHARD (parameters, gradients and optimizer state sharded), SHARD_GRAD_OP (ZeRO-2: gradients and "   \
    "optimizer state sharded, parameters whole), NO_SHARD (as ddp) or HYBRID_SHARD (FULL_SHARD within each "  \
    "node, replicated across nodes)",                                                                          \
    (fulgur::check::OneOf{{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"}}))                       \
  X(int64_t, min_num_params, 1000000,                                                                         \
    "wrap policy: a unit (one all-gather, one reduce-scatter) closes at a module boundary once it holds this many parameters", \
    fulgur::check::AtLeast{1})                                                                                \
  X(std::string, wrap_modules, "",                                                                            \
    "wrap policy: comma-separated submodule names (e.g. 'encoder,head') that are each one unit; the rest by min_num_params", \
    fulgur::check::Any{})                                                                                     \
  X(std::string, state_dict_type, "full",                                                                     \
    "full (rank 0 writes the usual checkpoint, gathered one unit at a time) or sharded (every rank writes its " \
    "shard beside a metadata file)",                                                                          \
    (fulgur::check::OneOf{{"full", "sharded"}}))                                                              \
  X(bool, forward_prefetch, false,                                                                            \
    "FULL_SHARD: start gathering the next ShardedUnit while the current one runs its forward (faster, one more " \
    "unit whole)",                                                                                             \
    fulgur::check::Any{})                                                                                     \
  X(std::string, backward_prefetch, "BACKWARD_PRE",                                                           \
    "FULL_SHARD: BACKWARD_PRE starts gathering the ShardedUnit before the current one as its backward starts; " \
    "NONE gathers each unit only when its backward needs it (least memory)",                                  \
    (fulgur::check::OneOf{{"BACKWARD_PRE", "NONE"}}))                                                          \
  X(bool, whole_after_fit, true,                                                                              \
    "FULL_SHARD: after fit, validate or test every rank's module holds whole parameters again (one all-gather " \
    "per unit); false keeps each rank's shard, for models that do not fit whole on one rank",                  \
    fulgur::check::Any{})
// clang-format on

/// The user's knobs of the fully sharded strategy (`--trainer.fsdp.*`),
/// with Lightning's FSDPStrategy names.
struct FSDPOptions {
  FULGUR_OPTIONS(FSDPOptions, FULGUR_FSDP_OPTIONS)
};

}  // namespace fulgur
