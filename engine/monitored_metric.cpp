#include <fulgur/engine/monitored_metric.hpp>

#include <fulgur/strategies/strategy.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace fulgur {

std::optional<double> monitored_value(Strategy& strategy, const std::map<std::string, double>& metrics,
                                      const std::string& name) {
  const auto found = metrics.find(name);
  torch::Tensor local = torch::tensor(
      {found != metrics.end() ? 1.0 : 0.0, found != metrics.end() ? found->second : 0.0}, torch::kFloat64);
  if (strategy.world_size() > 1) local = strategy.broadcast(local.to(strategy.root_device()), 0).cpu();
  if (local[0].item<double>() == 0.0) return std::nullopt;
  return local[1].item<double>();
}

std::string missing_monitor_message(const std::map<std::string, double>& callback_metrics, const std::string& what,
                                    const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [key, value] : callback_metrics) names.push_back(key);
  return fmt::format("{} conditioned on metric '{}', which is not available; available metrics: {}", what, name,
                     names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", ")));
}

}  // namespace fulgur
