#include <fulgur/online/weight_snapshot.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

namespace {

std::vector<torch::Tensor> tensors_of(const torch::nn::Module& module) {
  std::vector<torch::Tensor> out = module.parameters();
  for (const auto& b : module.buffers()) out.push_back(b);
  return out;
}

}  // namespace

void WeightSnapshot::publish(const std::vector<torch::Tensor>& tensors, int64_t step) {
  // Copied outside the lock; a published set is never written again.
  auto weights = std::make_shared<Weights>();
  weights->step = step;
  torch::NoGradGuard no_grad;
  for (const auto& t : tensors) weights->tensors.push_back(t.detach().clone());
  std::lock_guard lock(mutex_);
  latest_ = std::move(weights);
}

int64_t WeightSnapshot::copy_to(torch::nn::Module& module, int64_t have_step) const {
  std::shared_ptr<const Weights> weights;
  {
    std::lock_guard lock(mutex_);
    weights = latest_;
  }
  if (!weights) return -1;
  if (weights->step == have_step) return have_step;
  std::vector<torch::Tensor> targets = tensors_of(module);
  if (targets.size() != weights->tensors.size()) {
    throw std::logic_error(fmt::format("[WeightSnapshot::copy_to] the module has {} tensors, the snapshot {}",
                                       targets.size(), weights->tensors.size()));
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < targets.size(); ++i) targets[i].copy_(weights->tensors[i]);
  return weights->step;
}

int64_t WeightSnapshot::step() const {
  std::lock_guard lock(mutex_);
  return latest_ ? latest_->step : -1;
}

}  // namespace fulgur
