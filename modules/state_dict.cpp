#include <fulgur/modules/state_dict.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <utility>
#include <vector>

namespace fulgur {
namespace {

/// The module's parameters then buffers with their dotted names.
std::vector<std::pair<std::string, torch::Tensor>> named_tensors(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) tensors.emplace_back(item.key(), item.value());
  for (const auto& item : module.named_buffers(/*recurse=*/true)) tensors.emplace_back(item.key(), item.value());
  return tensors;
}

}  // namespace

c10::Dict<std::string, torch::Tensor> state_dict(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& [name, tensor] : named_tensors(module)) state.insert(name, tensor.detach());
  return state;
}

void load_state_dict(torch::nn::Module& module, const c10::Dict<std::string, torch::Tensor>& state, bool strict) {
  const auto targets = named_tensors(module);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> copies;  // (destination, source)
  copies.reserve(targets.size());
  for (const auto& [name, target] : targets) {
    const auto found = state.find(name);
    if (found == state.end()) {
      if (strict) throw std::invalid_argument(fmt::format("[load_state_dict] missing key '{}' in the state dict", name));
      continue;
    }
    const torch::Tensor& source = found->value();
    if (!source.defined() || source.sizes() != target.sizes()) {
      throw std::invalid_argument(fmt::format(
          "[load_state_dict] size mismatch for '{}': the state dict has [{}], the module has [{}]", name,
          source.defined() ? fmt::format("{}", fmt::join(source.sizes(), ", ")) : std::string("undefined"),
          fmt::join(target.sizes(), ", ")));
    }
    copies.emplace_back(target, source);
  }
  if (strict && copies.size() != state.size()) {
    for (const auto& entry : state) {
      bool known = false;
      for (const auto& target : targets) known = known || target.first == entry.key();
      if (!known) {
        throw std::invalid_argument(
            fmt::format("[load_state_dict] unexpected key '{}' in the state dict (the module has no such "
                        "parameter or buffer)",
                        entry.key()));
      }
    }
  }
  torch::NoGradGuard no_grad;
  for (auto& [target, source] : copies) target.copy_(source);
}

}  // namespace fulgur
