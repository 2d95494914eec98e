#include <fulgur/trainer/create_strategy.hpp>

#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/make_data_parallel_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config, const Platform& platform) {
  Accelerator accelerator(config.accelerator);
  if (config.strategy == StrategyKind::SingleDevice) {
    return std::make_unique<SingleDeviceStrategy>(accelerator, config.precision, accelerator.device(0));
  }
  const ClusterEnvironment* env = platform.environment.get();
  if (config.needs_launch || env == nullptr) {
    throw std::invalid_argument(fmt::format(
        "[create_strategy] devices={} num_nodes={} needs one process per device: the Trainer starts them, or "
        "torchrun, srun or mpirun",
        config.devices, config.options.num_nodes()));
  }
  DataParallelOptions data_parallel;
  data_parallel.process_group = process_group_options(*env, config.options.process_group_timeout());
  data_parallel.local_rank = env->local_rank();
  data_parallel.node_rank = env->node_rank();
  data_parallel.timeline_path = config.options.timeline();
  return make_data_parallel_strategy(config.strategy, accelerator, config.precision, std::move(data_parallel),
                                     env->local_world_size(), config.options.ddp(), config.options.fsdp(),
                                     config.options.horovod());
}

}  // namespace fulgur
