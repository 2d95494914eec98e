#include <fulgur/modules/lightning_optimizer.hpp>

#include <fulgur/modules/module_runtime.hpp>

#include <stdexcept>

namespace fulgur {

void LightningOptimizer::step() {
  if (runtime_ == nullptr) throw std::logic_error("[LightningOptimizer::step] the optimizer is not part of a run");
  runtime_->optimizer_step(index_);
}

}  // namespace fulgur
