#include <fulgur/strategies/horovod_strategy.hpp>

#include <fulgur/modules/lightning_module.hpp>

#include <cstring>
#include <sstream>

namespace fulgur {

HorovodStrategy::HorovodStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel,
                                 HorovodOptions options, DDPOptions ddp)
    : DataParallelStrategy(accelerator, precision, std::move(data_parallel), std::move(ddp)),
      options_(std::move(options)) {}

HorovodStrategy::~HorovodStrategy() {
  set_synchronizer(nullptr);  // the controller's thread uses gradient_group_
}

void HorovodStrategy::setup_environment() {
  DataParallelStrategy::setup_environment();
  // The gradient thread's own group: its collectives never pair with the
  // main thread's (metrics, broadcasts, barriers).
  if (!gradient_group_) gradient_group_ = std::make_unique<ProcessGroup>(process_group(), "horovod");
}

std::unique_ptr<GradientSynchronizer> HorovodStrategy::make_synchronizer(std::vector<torch::Tensor> parameters,
                                                                         std::vector<std::string> names) {
  return std::make_unique<HorovodController>(std::move(parameters), std::move(names), *gradient_group_,
                                             options_, ddp_options().find_unused_parameters(), timeline());
}

void HorovodStrategy::setup_optimizers(torch::optim::Optimizer& optimizer) {
  if (!options_.broadcast_optimizer_state() || world_size() == 1) return;
  torch::NoGradGuard no_grad;
  // configure_optimizers may have changed parameters on some ranks.
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) process_group().broadcast(p, 0);
  }
  // The state (momentum buffers, step counts) travels as torch's archive bytes.
  std::string bytes;
  if (is_global_zero()) {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
  }
  bytes = broadcast_bytes(bytes, 0);
  if (is_global_zero()) return;
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

}  // namespace fulgur
