#pragma once

#include <fulgur/core/option_enum.hpp>

#include <string>
#include <vector>

namespace fulgur {

/// The strategies a Trainer can run, as Lightning names them. Auto is
/// single_device for one process and ddp for more. ModelParallel splits
/// the model over a device mesh (tp, cp) with fsdp or ddp along dp.
enum class StrategyKind { Auto, SingleDevice, DDP, Horovod, FSDP, ModelParallel };

inline std::vector<std::string> option_choices(StrategyKind) {
  return {"auto", "single_device", "ddp", "horovod", "fsdp", "model_parallel"};
}

}  // namespace fulgur
