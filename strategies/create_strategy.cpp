#include <fulgur/strategies/create_strategy.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

DeviceMesh::Shape model_parallel_mesh(const ModelParallelOptions& options, int64_t world_size) {
  DeviceMesh::Shape shape;
  shape.tp = options.tensor_parallel_size();
  shape.cp = options.context_parallel_size();
  shape.pp = options.pipeline_parallel_size();
  shape.order = options.mesh_order();
  const int64_t block = shape.tp * shape.cp * shape.pp;
  const std::string pp = shape.pp > 1 ? fmt::format(" x pipeline_parallel_size {}", shape.pp) : "";
  if (options.data_parallel_size() == "auto") {
    if (world_size % block != 0) {
      throw std::invalid_argument(
          fmt::format("[model_parallel] tensor_parallel_size {} x context_parallel_size {}{} = {} does not divide the "
                      "world size {}",
                      shape.tp, shape.cp, pp, block, world_size));
    }
    shape.dp = world_size / block;
  } else {
    shape.dp = std::stoll(options.data_parallel_size());
    if (shape.dp * block != world_size) {
      throw std::invalid_argument(fmt::format(
          "[model_parallel] data_parallel_size {} x tensor_parallel_size {} x context_parallel_size {}{} = {}, but the "
          "world size is {}",
          shape.dp, shape.tp, shape.cp, pp, shape.dp * block, world_size));
    }
  }
  return shape;
}

std::unique_ptr<Strategy> create_strategy(const StrategySpec& spec) {
  Accelerator accelerator(spec.accelerator);
  if (spec.kind == StrategyKind::SingleDevice) {
    return std::make_unique<SingleDeviceStrategy>(accelerator, spec.precision, accelerator.device(0));
  }
  if (spec.environment == nullptr) {
    throw std::invalid_argument("[create_strategy] " + to_string(spec.kind) +
                                " needs the cluster environment of this process (its rank and rendezvous)");
  }
  const ClusterEnvironment& env = *spec.environment;
  DataParallelOptions data_parallel;
  data_parallel.process_group = process_group_options(env, spec.process_group_timeout);
  data_parallel.process_group.backend = spec.process_group_backend;
  data_parallel.local_rank = env.local_rank();
  data_parallel.node_rank = env.node_rank();
  data_parallel.timeline_path = spec.timeline_path;
  switch (spec.kind) {
    case StrategyKind::DDP:
      return std::make_unique<DDPStrategy>(accelerator, spec.precision, std::move(data_parallel), spec.ddp);
    case StrategyKind::FSDP:
      return std::make_unique<FSDPStrategy>(accelerator, spec.precision, std::move(data_parallel), spec.fsdp, spec.ddp,
                                            env.local_world_size());
    case StrategyKind::Horovod:
      return std::make_unique<HorovodStrategy>(accelerator, spec.precision, std::move(data_parallel), spec.horovod,
                                               spec.ddp);
    case StrategyKind::ModelParallel: {
      const ModelParallelOptions& mp = spec.model_parallel;
      data_parallel.mesh = model_parallel_mesh(mp, env.world_size());
      data_parallel.pipeline_schedule = mp.pipeline_schedule();
      data_parallel.microbatches = mp.microbatches();
      data_parallel.virtual_stages = mp.virtual_stages();
      data_parallel.sharded_checkpoint = mp.state_dict_type() == StateDictType::Sharded;
      if (mp.data_parallel() == DataParallelKind::DDP) {
        return std::make_unique<DDPStrategy>(accelerator, spec.precision, std::move(data_parallel), spec.ddp);
      }
      if (spec.fsdp.sharding_strategy() == ShardingStrategy::HybridShard ||
          spec.fsdp.state_dict_type() == StateDictType::Sharded) {
        throw std::invalid_argument(
            "[create_strategy] strategy model_parallel runs fsdp along dp with sharding_strategy FULL_SHARD, "
            "SHARD_GRAD_OP or NO_SHARD and fsdp.state_dict_type full (the mesh is the hybrid; a mesh's sharded "
            "checkpoints are model_parallel.state_dict_type sharded)");
      }
      return std::make_unique<FSDPStrategy>(accelerator, spec.precision, std::move(data_parallel), spec.fsdp, spec.ddp,
                                            env.local_world_size());
    }
    default:
      throw std::invalid_argument("[create_strategy] not a strategy to make: " + to_string(spec.kind));
  }
}

}  // namespace fulgur
