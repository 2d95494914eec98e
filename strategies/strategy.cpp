#include <fulgur/strategies/strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>

namespace fulgur {

Strategy::Strategy(Accelerator accelerator, PrecisionMode precision, torch::Device root_device)
    : accelerator_(accelerator), root_device_(root_device), precision_(precision, root_device) {}

void Strategy::setup_environment() { accelerator_.setup_device(root_device_); }

void Strategy::setup(LightningModule& module) { module.to(root_device_); }

void Strategy::backward(const torch::Tensor& loss, bool /*sync_gradients*/) { precision_.backward(loss); }

bool Strategy::optimizer_step(torch::optim::Optimizer& optimizer) { return precision_.optimizer_step(optimizer); }

Batch Strategy::batch_to_device(const Batch& batch) const {
  if (batch.input.device() == root_device_) return batch;
  return batch.to(root_device_, accelerator_.supports_non_blocking_copy() && batch.input.is_pinned());
}

}  // namespace fulgur
