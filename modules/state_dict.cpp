#include <fulgur/modules/state_dict.hpp>

#include <fulgur/modules/metrics/metric.hpp>

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

/// A persistent metric state: the metric and the state's name in it.
struct MetricState {
  std::string key;
  metrics::Metric* metric;
  std::string state;
  torch::Tensor value;
};

/// The persistent states of every Metric in `module` (itself included),
/// keyed "<module path>.<state>", as torchmetrics adds them to state_dict.
std::vector<MetricState> metric_states(const torch::nn::Module& module) {
  std::vector<MetricState> out;
  auto add = [&out](const std::string& path, const torch::nn::Module& m) {
    const auto* metric = dynamic_cast<const metrics::Metric*>(&m);
    if (metric == nullptr) return;
    for (auto& [state, value] : metric->persistent_states()) {
      out.push_back({path.empty() ? state : path + "." + state, const_cast<metrics::Metric*>(metric), state, value});
    }
  };
  add("", module);
  // Not include_self: a module on the stack has no shared_ptr to hand out.
  for (const auto& item : module.named_modules("", /*include_self=*/false)) add(item.key(), *item.value());
  return out;
}

}  // namespace

c10::Dict<std::string, torch::Tensor> state_dict(const torch::nn::Module& module) {
  c10::Dict<std::string, torch::Tensor> state;
  for (const auto& [name, tensor] : named_tensors(module)) state.insert(name, tensor.detach());
  for (const auto& m : metric_states(module)) state.insert(m.key, m.value.detach());
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
  // Metric states: a Cat state's row count is whatever was gathered.
  const auto metric_targets = metric_states(module);
  std::vector<std::pair<const MetricState*, torch::Tensor>> loads;
  for (const auto& m : metric_targets) {
    const auto found = state.find(m.key);
    if (found == state.end()) {
      if (strict) throw std::invalid_argument(fmt::format("[load_state_dict] missing key '{}' in the state dict", m.key));
      continue;
    }
    try {
      m.metric->check_state(m.state, found->value());
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("[load_state_dict] size mismatch for '{}': {}", m.key, e.what()));
    }
    loads.emplace_back(&m, found->value());
  }
  if (strict && copies.size() + loads.size() != state.size()) {
    for (const auto& entry : state) {
      bool known = false;
      for (const auto& target : targets) known = known || target.first == entry.key();
      for (const auto& m : metric_targets) known = known || m.key == entry.key();
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
  for (auto& [m, source] : loads) m->metric->load_state(m->state, source);
}

}  // namespace fulgur
