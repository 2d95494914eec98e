#pragma once

#include <string>
#include <vector>

namespace fulgur {

/// The strategies a Trainer can run, as Lightning names them. Auto is
/// single_device for one process and ddp for more.
enum class StrategyKind { Auto, SingleDevice, DDP, Horovod, FSDP };

/// "auto", "single_device", "ddp", "horovod", "fsdp", in the enum's order.
std::vector<std::string> option_choices(StrategyKind);
std::string to_string(StrategyKind kind);
/// The kind named `name`; throws std::invalid_argument listing the names.
StrategyKind strategy_kind(const std::string& name);

}  // namespace fulgur
