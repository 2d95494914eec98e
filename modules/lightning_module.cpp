#include <fulgur/modules/lightning_module.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

void LightningModule::validation_step(const Batch&, int64_t) {}

void LightningModule::test_step(const Batch&, int64_t) {}

torch::Tensor LightningModule::predict_step(const Batch&, int64_t) {
  throw std::logic_error("[LightningModule::predict_step] not implemented: override predict_step to use predict()");
}

void LightningModule::log(const std::string& name, const torch::Tensor& value, const LogOptions& options) {
  if (results_ == nullptr) {
    throw std::logic_error(fmt::format(
        "[LightningModule::log] '{}' was logged outside a Trainer loop (log only inside steps and hooks)", name));
  }
  results_->log(name, value, options);
}

void LightningModule::log(const std::string& name, double value, const LogOptions& options) {
  log(name, torch::tensor(value, torch::kFloat64), options);
}

}  // namespace fulgur
