#include <fulgur/strategies/ddp_strategy.hpp>

namespace fulgur {

DDPStrategy::DDPStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel,
                         DDPOptions options)
    : DataParallelStrategy(accelerator, precision, std::move(data_parallel), std::move(options)) {}

std::unique_ptr<GradientSynchronizer> DDPStrategy::make_synchronizer(std::vector<torch::Tensor> parameters,
                                                                     std::vector<std::string> names) {
  return std::make_unique<GradientReducer>(std::move(parameters), std::move(names), *replicas(),
                                           ddp_options(), timeline());
}

}  // namespace fulgur
