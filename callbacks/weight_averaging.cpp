#include <fulgur/callbacks/weight_averaging.hpp>

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {
namespace {

const std::string kAveragePrefix = "average.";

}  // namespace

void WeightAveraging::average(torch::Tensor& averaged, const torch::Tensor& current, int64_t n_averaged) const {
  averaged.add_((current - averaged) / static_cast<double>(n_averaged + 1));
}

std::map<std::string, torch::Tensor> WeightAveraging::weights_of(LightningModule& module) const {
  std::map<std::string, torch::Tensor> weights;
  for (const auto& item : module.named_parameters()) weights[item.key()] = item.value();
  if (use_buffers_) {
    for (const auto& item : module.named_buffers()) weights[item.key()] = item.value();
  }
  return weights;
}

void WeightAveraging::on_fit_start(Trainer&, LightningModule& module) {
  averaged_.clear();
  for (const auto& [name, tensor] : weights_of(module)) averaged_[name] = tensor.detach().clone();
  n_averaged_ = 0;
  latest_update_step_ = 0;
  latest_update_epoch_ = -1;
  swapped_ = false;
}

void WeightAveraging::update(LightningModule& module) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : weights_of(module)) {
    torch::Tensor& averaged = averaged_.at(name);
    if (n_averaged_ == 0 || !tensor.is_floating_point()) {
      averaged.copy_(tensor);
    } else {
      average(averaged, tensor.detach(), n_averaged_);
    }
  }
  ++n_averaged_;
}

void WeightAveraging::on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor&,
                                         const Batch&, int64_t) {
  // Only after an optimizer step (not on the batches that accumulate gradients).
  if (trainer.state().global_step() > latest_update_step_ && should_update(trainer.state().global_step() - 1, std::nullopt)) {
    update(module);
    latest_update_step_ = trainer.state().global_step();
  }
}

void WeightAveraging::on_train_epoch_end(Trainer& trainer, LightningModule& module) {
  if (trainer.state().current_epoch() > latest_update_epoch_ && should_update(std::nullopt, trainer.state().current_epoch())) {
    update(module);
    latest_update_epoch_ = trainer.state().current_epoch();
  }
}

void WeightAveraging::swap(LightningModule& module) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : weights_of(module)) {
    torch::Tensor& averaged = averaged_.at(name);
    torch::Tensor held = tensor.detach().clone();
    tensor.detach().copy_(averaged);
    averaged.copy_(held);
  }
  swapped_ = !swapped_;
}

void WeightAveraging::on_validation_epoch_start(Trainer& trainer, LightningModule& module) {
  if (validate_with_average_ && n_averaged_ > 0 && !swapped_ && !trainer.state().sanity_checking()) swap(module);
}

void WeightAveraging::on_validation_epoch_end(Trainer&, LightningModule& module) {
  if (swapped_) swap(module);
}

void WeightAveraging::copy_average_to(LightningModule& module) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : weights_of(module)) tensor.detach().copy_(averaged_.at(name));
}

void WeightAveraging::on_train_end(Trainer&, LightningModule& module) {
  if (n_averaged_ > 0) copy_average_to(module);
}

CallbackState WeightAveraging::state_dict() const {
  CallbackState state;
  state["n_averaged"] = n_averaged_;
  state["latest_update_step"] = latest_update_step_;
  state["latest_update_epoch"] = latest_update_epoch_;
  for (const auto& [name, tensor] : averaged_) state[kAveragePrefix + name] = tensor.detach().clone().cpu();
  return state;
}

void WeightAveraging::load_state_dict(const CallbackState& state) {
  auto integer = [&](const std::string& key) {
    const auto found = state.find(key);
    if (found == state.end() || !found->second.isInt()) {
      throw std::runtime_error(fmt::format("[{}::load_state_dict] the state has no integer '{}'", state_key(), key));
    }
    return found->second.toInt();
  };
  n_averaged_ = integer("n_averaged");
  latest_update_step_ = integer("latest_update_step");
  latest_update_epoch_ = integer("latest_update_epoch");
  for (auto& [name, tensor] : averaged_) {
    const auto found = state.find(kAveragePrefix + name);
    if (found == state.end() || !found->second.isTensor()) {
      throw std::runtime_error(fmt::format("[{}::load_state_dict] the state has no average of '{}'", state_key(), name));
    }
    tensor.copy_(found->second.toTensor());
  }
}

}  // namespace fulgur
