#include <fulgur/strategies/single_device_strategy.hpp>

namespace fulgur {

SingleDeviceStrategy::SingleDeviceStrategy(Accelerator accelerator, PrecisionMode precision, torch::Device device)
    : Strategy(accelerator, precision, device) {}

torch::Tensor SingleDeviceStrategy::all_reduce(const torch::Tensor& tensor, ReduceOp) { return tensor; }

torch::Tensor SingleDeviceStrategy::broadcast(const torch::Tensor& tensor, int64_t) { return tensor; }

torch::Tensor SingleDeviceStrategy::all_gather(const torch::Tensor& tensor) {
  return tensor.detach().unsqueeze(0).clone();
}

void SingleDeviceStrategy::barrier(const std::string&) {}

}  // namespace fulgur
