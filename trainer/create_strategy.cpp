#include <fulgur/trainer/create_strategy.hpp>

#include <fulgur/strategies/cluster_environment.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <sstream>
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
  data_parallel.broadcast_buffers = config.options.ddp().broadcast_buffers();
  data_parallel.timeline_path = config.options.timeline();
  GradientReducer::Options reducer;
  reducer.find_unused_parameters = config.options.ddp().find_unused_parameters();
  reducer.bucket_bytes = static_cast<int64_t>(config.options.ddp().bucket_cap_mb() * (1 << 20));
  reducer.first_bucket_bytes = std::min<int64_t>(reducer.first_bucket_bytes, reducer.bucket_bytes);
  if (config.strategy == StrategyKind::DDP) {
    return std::make_unique<DDPStrategy>(accelerator, config.precision, DDPStrategyOptions{data_parallel, reducer});
  }
  if (config.strategy == StrategyKind::FSDP) {
    const FSDPOptions& f = config.options.fsdp();
    FSDPStrategyOptions fsdp;
    fsdp.data_parallel = std::move(data_parallel);
    fsdp.reducer = reducer;
    fsdp.shard_group_size = env->local_world_size();
    fsdp.sharding = sharding_strategy(f.sharding_strategy());
    fsdp.sharded.min_unit_numel = f.min_num_params();
    fsdp.sharded_state_dict = f.state_dict_type() == "sharded";
    fsdp.whole_after_fit = f.whole_after_fit();
    fsdp.forward_prefetch = f.forward_prefetch();
    fsdp.backward_prefetch = f.backward_prefetch() == "BACKWARD_PRE";
    fsdp.sharded.find_unused_parameters = config.options.ddp().find_unused_parameters();
    std::stringstream names(f.wrap_modules());
    for (std::string name; std::getline(names, name, ',');) {
      if (!name.empty()) fsdp.sharded.unit_modules.push_back(name);
    }
    return std::make_unique<FSDPStrategy>(accelerator, config.precision, std::move(fsdp));
  }
  HorovodStrategyOptions horovod;
  horovod.data_parallel = std::move(data_parallel);
  const HorovodOptions& h = config.options.horovod();
  horovod.controller.fusion_threshold_bytes = static_cast<int64_t>(h.fusion_threshold_mb() * (1 << 20));
  horovod.controller.cycle_time = std::chrono::microseconds(static_cast<int64_t>(h.cycle_time_ms() * 1000.0));
  horovod.controller.fp16_compression = h.compression() == "fp16";
  horovod.controller.stall.warning_s = h.stall_warning_s();
  horovod.controller.stall.shutdown_s = h.stall_shutdown_s();
  horovod.controller.find_unused_parameters = config.options.ddp().find_unused_parameters();
  horovod.broadcast_optimizer_state = h.broadcast_optimizer_state();
  return std::make_unique<HorovodStrategy>(accelerator, config.precision, std::move(horovod));
}

}  // namespace fulgur
