#include <fulgur/strategies/sharding/tensor_pool.hpp>

namespace fulgur {

torch::Tensor TensorPool::take(int64_t numel, const torch::TensorOptions& options) {
  for (size_t i = 0; i < free_.size(); ++i) {
    const torch::Tensor& t = free_[i];
    if (t.numel() == numel && t.scalar_type() == options.dtype().toScalarType() && t.device() == options.device()) {
      torch::Tensor found = std::move(free_[i]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return found;
    }
  }
  return torch::empty({numel}, options);
}

void TensorPool::give(torch::Tensor& tensor) {
  if (tensor.defined()) free_.push_back(std::move(tensor));
  tensor = torch::Tensor();
}

}  // namespace fulgur
