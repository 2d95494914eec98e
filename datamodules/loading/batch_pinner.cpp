#include <fulgur/datamodules/loading/batch_pinner.hpp>

#include <utility>

namespace fulgur {

BatchPinner::BatchPinner() {
  // Without CUDA there is no page-locked allocator: pin_memory is ignored.
  if (torch::cuda::is_available()) pin_tensor_ = [](const torch::Tensor& tensor) { return tensor.pin_memory(); };
}

BatchPinner::BatchPinner(PinTensor pin_tensor) : pin_tensor_(std::move(pin_tensor)) {}

bool BatchPinner::pinnable(const torch::Tensor& tensor) {
  return tensor.defined() && tensor.device().is_cpu() && tensor.layout() == torch::kStrided;
}

Batch BatchPinner::pin(const Batch& batch) const {
  if (!pin_tensor_) return batch;
  return batch.map([&](const torch::Tensor& tensor) { return pinnable(tensor) ? pin_tensor_(tensor) : tensor; });
}

}  // namespace fulgur
