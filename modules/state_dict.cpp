#include <fulgur/modules/state_dict.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur {

c10::Dict<std::string, torch::Tensor> state_dict(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) state.insert(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) state.insert(item.key(), item.value());
  return state;
}

void load_state_dict(torch::nn::Module& module, const c10::Dict<std::string, torch::Tensor>& state, bool strict) {
  torch::NoGradGuard no_grad;
  auto targets = module.named_parameters(/*recurse=*/true);
  for (const auto& item : module.named_buffers(/*recurse=*/true)) targets.insert(item.key(), item.value());

  if (strict) {
    for (const auto& item : targets) {
      if (!state.contains(item.key())) {
        throw std::invalid_argument(
            fmt::format("[load_state_dict] missing key '{}' in the state dict", item.key()));
      }
    }
    for (const auto& entry : state) {
      if (!targets.contains(entry.key())) {
        throw std::invalid_argument(
            fmt::format("[load_state_dict] unexpected key '{}' in the state dict", entry.key()));
      }
    }
  }
  // Check every shape before copying anything, so a mismatch leaves the module untouched.
  for (const auto& item : targets) {
    if (!state.contains(item.key())) continue;
    const torch::Tensor source = state.at(item.key());
    const torch::Tensor& target = item.value();
    if (source.sizes() != target.sizes()) {
      throw std::invalid_argument(fmt::format("[load_state_dict] shape mismatch for '{}': module [{}], state dict [{}]",
                                              item.key(), fmt::join(target.sizes(), ","),
                                              fmt::join(source.sizes(), ",")));
    }
  }
  for (auto& item : targets) {
    if (state.contains(item.key())) item.value().copy_(state.at(item.key()));
  }
}

}  // namespace fulgur
