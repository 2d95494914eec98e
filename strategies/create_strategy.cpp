#include <fulgur/strategies/create_strategy.hpp>

#include <fulgur/strategies/single_device_strategy.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<Strategy> create_strategy(const TrainerConfig& config) {
  Accelerator accelerator(config.accelerator);
  if (config.strategy == "single_device") {
    return std::make_unique<SingleDeviceStrategy>(accelerator, config.precision, accelerator.device(0));
  }
  throw std::invalid_argument(fmt::format("[create_strategy] strategy '{}' is not built yet", config.strategy));
}

}  // namespace fulgur
