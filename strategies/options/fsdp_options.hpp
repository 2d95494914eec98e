#pragma once

#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// What the fully sharded strategy splits over the ranks (Lightning's names).
enum class ShardingStrategy {
  /// ZeRO-3: parameters, gradients and optimizer state sharded; parameters
  /// are whole only from a step's forward to the end of its backward.
  FullShard,
  /// ZeRO-2: gradients and optimizer state sharded; parameters stay whole.
  ShardGradOp,
  /// Nothing sharded: DDP's gradient path.
  NoShard,
  /// FULL_SHARD within each group of `shard_group_size` consecutive ranks
  /// (a node's), replicated across the groups: gradient shards are averaged
  /// over the replicas, so only 1/group of the gradients crosses nodes.
  HybridShard,
};

inline std::vector<std::string> option_choices(ShardingStrategy) {
  return {"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD"};
}

/// How a checkpoint holds the sharded state: gathered into one file by rank 0, or one shard per rank.
enum class StateDictType { Full, Sharded };
inline std::vector<std::string> option_choices(StateDictType) { return {"full", "sharded"}; }

/// When FULL_SHARD gathers a unit's parameters for backward: ahead of need, or only at need.
enum class BackwardPrefetch { BackwardPre, None };
inline std::vector<std::string> option_choices(BackwardPrefetch) { return {"BACKWARD_PRE", "NONE"}; }

// clang-format off
#define FULGUR_FSDP_OPTIONS(X)                                                                                 \
  X(fulgur::ShardingStrategy, sharding_strategy, fulgur::ShardingStrategy::FullShard,                         \
    "FULL_SHARD (parameters, gradients and optimizer state sharded), SHARD_GRAD_OP (ZeRO-2: gradients and "   \
    "optimizer state sharded, parameters whole), NO_SHARD (as ddp) or HYBRID_SHARD (FULL_SHARD within each "  \
    "node, replicated across nodes)",                                                                          \
    fulgur::check::Any{})                                                                                     \
  X(int64_t, min_num_params, 1000000,                                                                         \
    "wrap policy: a unit (one all-gather, one reduce-scatter) closes at a module boundary once it holds this many parameters", \
    fulgur::check::AtLeast{1})                                                                                \
  X(std::string, wrap_modules, "",                                                                            \
    "wrap policy: comma-separated submodule names (e.g. 'encoder,head') that are each one unit; the rest by min_num_params", \
    fulgur::check::Any{})                                                                                     \
  X(fulgur::StateDictType, state_dict_type, fulgur::StateDictType::Full,                                      \
    "full (rank 0 writes the usual checkpoint, gathered one unit at a time) or sharded (every rank writes its " \
    "shard beside a metadata file)",                                                                          \
    fulgur::check::Any{})                                                                                     \
  X(bool, forward_prefetch, false,                                                                            \
    "FULL_SHARD: start gathering the next ShardedUnit while the current one runs its forward (faster, one more " \
    "unit whole)",                                                                                             \
    fulgur::check::Any{})                                                                                     \
  X(fulgur::BackwardPrefetch, backward_prefetch, fulgur::BackwardPrefetch::BackwardPre,                       \
    "FULL_SHARD: BACKWARD_PRE starts gathering the ShardedUnit before the current one as its backward starts; " \
    "NONE gathers each unit only when its backward needs it (least memory)",                                  \
    fulgur::check::Any{})                                                                                     \
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
