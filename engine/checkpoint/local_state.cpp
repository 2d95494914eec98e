#include <fulgur/engine/checkpoint/local_state.hpp>

#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/strategies/strategy.hpp>

namespace fulgur {

c10::Dict<std::string, torch::Tensor> local_weights(const Strategy& strategy, const torch::nn::Module& module,
                                                    c10::Dict<std::string, torch::Tensor> whole) {
  if (!strategy.shards_parameters()) return whole;
  // Parameters hold this rank's rows: take those rows of the whole.
  for (const auto& item : module.named_parameters()) {
    if (whole.contains(item.key())) {
      whole.insert_or_assign(item.key(), strategy.local_tensor(item.value(), whole.at(item.key())));
    }
  }
  return whole;
}

void load_local_optimizer_state(const Strategy& strategy, torch::optim::Optimizer& optimizer,
                                const c10::impl::GenericDict& whole) {
  if (!strategy.shards_optimizer_state()) {
    load_optimizer_state_dict(optimizer, whole);
    return;
  }
  // Whole state (any world size wrote it): this rank keeps its rows.
  c10::impl::GenericDict saved = whole.copy();
  const std::vector<torch::Tensor> params = indexed_parameters(optimizer);
  c10::impl::GenericDict state(c10::IntType::get(), c10::AnyType::get());
  for (const auto& entry : saved.at("state").toGenericDict()) {
    const torch::Tensor& param = params.at(static_cast<size_t>(entry.key().toInt()));
    c10::impl::GenericDict local = entry.value().toGenericDict().copy();
    for (const auto& item : entry.value().toGenericDict()) {
      if (item.value().isTensor() && item.value().toTensor().dim() > 0) {
        local.insert_or_assign(item.key(), strategy.local_tensor(param, item.value().toTensor()));
      }
    }
    state.insert(entry.key(), local);
  }
  saved.insert_or_assign("state", state);
  load_optimizer_state_dict(optimizer, saved,
                            [&](const torch::Tensor& p) { return strategy.local_tensor(p, p.detach()); });
}

}  // namespace fulgur
