#include <fulgur/trainer/create_strategy.hpp>

#include <fulgur/strategies/cluster_environment.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config, const Platform& platform) {
  Accelerator accelerator(config.accelerator);
  if (config.strategy == "single_device") {
    return std::make_unique<SingleDeviceStrategy>(accelerator, config.precision, accelerator.device(0));
  }
  if (config.strategy == "ddp" || config.strategy == "horovod") {
    const ClusterEnvironment* env = platform.environment.get();
    if (config.needs_launch || env == nullptr) {
      throw std::invalid_argument(fmt::format(
          "[create_strategy] devices={} num_nodes={} needs one process per device: run through fulgur::cli::run "
          "(it starts them), torchrun, srun or mpirun",
          config.devices, config.num_nodes));
    }
    DDPOptions options;
    options.process_group = process_group_options(*env, config.process_group_timeout);
    options.local_rank = env->local_rank();
    options.node_rank = env->node_rank();
    options.reducer.find_unused_parameters = config.find_unused_parameters;
    options.reducer.bucket_bytes = static_cast<int64_t>(config.bucket_cap_mb * (1 << 20));
    options.reducer.first_bucket_bytes = std::min<int64_t>(options.reducer.first_bucket_bytes,
                                                           options.reducer.bucket_bytes);
    options.broadcast_buffers = config.broadcast_buffers;
    options.timeline_path = config.timeline;
    if (config.strategy == "ddp") return std::make_unique<DDPStrategy>(accelerator, config.precision, std::move(options));
    HorovodOptions horovod;
    horovod.ddp = std::move(options);
    const HorovodSettings& h = config.horovod;
    horovod.controller.fusion_threshold_bytes = static_cast<int64_t>(h.fusion_threshold_mb() * (1 << 20));
    horovod.controller.cycle_time = std::chrono::microseconds(static_cast<int64_t>(h.cycle_time_ms() * 1000.0));
    horovod.controller.fp16_compression = h.compression() == "fp16";
    horovod.controller.stall.warning_s = h.stall_warning_s();
    horovod.controller.stall.shutdown_s = h.stall_shutdown_s();
    horovod.controller.find_unused_parameters = config.find_unused_parameters;
    horovod.broadcast_optimizer_state = h.broadcast_optimizer_state();
    return std::make_unique<HorovodStrategy>(accelerator, config.precision, std::move(horovod));
  }
  throw std::invalid_argument(fmt::format("[create_strategy] strategy '{}' is not built yet", config.strategy));
}

}  // namespace fulgur
