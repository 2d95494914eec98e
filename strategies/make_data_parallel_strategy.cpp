#include <fulgur/strategies/make_data_parallel_strategy.hpp>

#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/fsdp_strategy.hpp>
#include <fulgur/strategies/horovod_strategy.hpp>

#include <stdexcept>

namespace fulgur {

std::unique_ptr<DataParallelStrategy> make_data_parallel_strategy(StrategyKind kind, Accelerator accelerator,
                                                                  PrecisionMode precision,
                                                                  DataParallelOptions data_parallel,
                                                                  int64_t local_world_size, const DDPOptions& ddp,
                                                                  const FSDPOptions& fsdp,
                                                                  const HorovodOptions& horovod) {
  switch (kind) {
    case StrategyKind::DDP:
      return std::make_unique<DDPStrategy>(accelerator, precision, std::move(data_parallel), ddp);
    case StrategyKind::FSDP:
      return std::make_unique<FSDPStrategy>(accelerator, precision, std::move(data_parallel), fsdp, ddp,
                                            local_world_size);
    case StrategyKind::Horovod:
      return std::make_unique<HorovodStrategy>(accelerator, precision, std::move(data_parallel), horovod, ddp);
    default:
      throw std::invalid_argument("[make_data_parallel_strategy] not a data-parallel strategy: " + to_string(kind));
  }
}

}  // namespace fulgur
