#include <fulgur/trainer/training_state_bytes.hpp>

#include <fulgur/engine/checkpoint/optimizer_state.hpp>

#include <unordered_set>

namespace fulgur {

int64_t training_state_bytes(const Strategy& strategy, torch::nn::Module& module,
                             const std::vector<OptimizerConfig>& optimizers) {
  std::unordered_set<const void*> seen;
  int64_t bytes = 0;
  // Views share a storage: a gradient inside a bucket is the bucket's bytes.
  auto count = [&](const torch::Tensor& t) {
    if (!t.defined() || !t.has_storage()) return;
    const c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
    if (seen.insert(storage).second) bytes += static_cast<int64_t>(t.storage().nbytes());
  };
  for (const auto& p : module.parameters()) {
    count(p);
    count(p.grad());
  }
  for (const auto& t : strategy.held_tensors()) count(t);
  for (const auto& config : optimizers) {
    const auto state = optimizer_state_dict(*config.optimizer).at("state").toGenericDict();
    for (const auto& entry : state) {
      for (const auto& item : entry.value().toGenericDict()) {
        if (item.value().isTensor() && item.value().toTensor().dim() > 0) count(item.value().toTensor());
      }
    }
  }
  return bytes;
}

}  // namespace fulgur
