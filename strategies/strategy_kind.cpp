#include <fulgur/strategies/strategy_kind.hpp>

#include <fulgur/modules/did_you_mean.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur {

std::vector<std::string> option_choices(StrategyKind) { return {"auto", "single_device", "ddp", "horovod", "fsdp"}; }

std::string to_string(StrategyKind kind) { return option_choices(kind).at(static_cast<size_t>(kind)); }

StrategyKind strategy_kind(const std::string& name) {
  const auto names = option_choices(StrategyKind::Auto);
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<StrategyKind>(i);
  }
  throw std::invalid_argument(
      fmt::format("[strategy_kind] strategy must be one of {}, got '{}'{}", fmt::join(names, ", "), name,
                  did_you_mean(name, names)));
}

}  // namespace fulgur
