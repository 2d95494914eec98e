#include <fulgur/strategies/create_strategy.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <stdexcept>

namespace fulgur {

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
    default:
      throw std::invalid_argument("[create_strategy] not a strategy to make: " + to_string(spec.kind));
  }
}

}  // namespace fulgur
