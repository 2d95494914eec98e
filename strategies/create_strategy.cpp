#include <fulgur/strategies/create_strategy.hpp>

#include <fulgur/strategies/cluster_environment.hpp>
#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <cstdlib>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config, const Platform& platform) {
  Accelerator accelerator(config.accelerator);
  if (config.strategy == "single_device") {
    return std::make_unique<SingleDeviceStrategy>(accelerator, config.precision, accelerator.device(0));
  }
  if (config.strategy == "ddp") {
    const ClusterEnvironment* env = platform.environment.get();
    if (config.needs_launch || env == nullptr) {
      throw std::invalid_argument(fmt::format(
          "[create_strategy] devices={} num_nodes={} needs one process per device: run through fulgur::cli::run "
          "(it starts them), torchrun, srun or mpirun",
          config.devices, config.num_nodes));
    }
    DDPOptions options;
    options.process_group.rank = env->global_rank();
    options.process_group.world_size = env->world_size();
    options.process_group.main_address = env->main_address();
    options.process_group.main_port = env->main_port();
    options.process_group.file_store_path = env->file_store_path();
    options.process_group.all_local = env->num_nodes() == 1;
    // torchrun's agent already serves a TCPStore on MASTER_PORT and says so.
    const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
    options.process_group.store_hosted_externally = agent_store != nullptr && std::string(agent_store) == "True";
    options.process_group.timeout =
        std::chrono::milliseconds(static_cast<int64_t>(config.process_group_timeout * 1000.0));
    options.local_rank = env->local_rank();
    options.node_rank = env->node_rank();
    options.reducer.find_unused_parameters = config.find_unused_parameters;
    options.reducer.bucket_bytes = static_cast<int64_t>(config.bucket_cap_mb * (1 << 20));
    options.reducer.first_bucket_bytes = std::min<int64_t>(options.reducer.first_bucket_bytes,
                                                           options.reducer.bucket_bytes);
    options.broadcast_buffers = config.broadcast_buffers;
    return std::make_unique<DDPStrategy>(accelerator, config.precision, std::move(options));
  }
  throw std::invalid_argument(fmt::format("[create_strategy] strategy '{}' is not built yet", config.strategy));
}

}  // namespace fulgur
