#pragma once

#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/options/ddp_options.hpp>
#include <fulgur/strategies/options/fsdp_options.hpp>
#include <fulgur/strategies/options/horovod_options.hpp>
#include <fulgur/strategies/strategy_kind.hpp>

#include <memory>

namespace fulgur {

/// The data-parallel strategy `kind` names (DDP, FSDP or Horovod), each made
/// from its own options section as the Trainer's configuration holds it;
/// `local_world_size` is the ranks of a node (HYBRID_SHARD's shard group).
/// The unused-parameter switch of every kind is ddp's.
std::unique_ptr<DataParallelStrategy> make_data_parallel_strategy(StrategyKind kind, Accelerator accelerator,
                                                                  PrecisionMode precision,
                                                                  DataParallelOptions data_parallel,
                                                                  int64_t local_world_size, const DDPOptions& ddp,
                                                                  const FSDPOptions& fsdp,
                                                                  const HorovodOptions& horovod);

}  // namespace fulgur
