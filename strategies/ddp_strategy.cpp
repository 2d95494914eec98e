#include <fulgur/strategies/ddp_strategy.hpp>

namespace fulgur {

DDPStrategy::DDPStrategy(Accelerator accelerator, PrecisionMode precision, DDPStrategyOptions options)
    : DataParallelStrategy(accelerator, precision, std::move(options.data_parallel)),
      reducer_options_(options.reducer) {}

std::unique_ptr<GradientSynchronizer> DDPStrategy::make_synchronizer(std::vector<torch::Tensor> parameters,
                                                                     std::vector<std::string> names) {
  return std::make_unique<GradientReducer>(std::move(parameters), std::move(names), process_group(),
                                           reducer_options_, timeline());
}

}  // namespace fulgur
