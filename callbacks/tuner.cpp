#include <fulgur/callbacks/tuner.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <map>
#include <mutex>

namespace fulgur {

std::shared_ptr<LRFinder> Tuner::lr_find(LightningModule& module, DataModule& data, LRFinderOptions options) {
  auto finder = std::make_shared<LRFinder>(options);
  std::map<std::string, torch::Tensor> saved;
  for (const auto& item : module.named_parameters()) saved[item.key()] = item.value().detach().clone();
  for (const auto& item : module.named_buffers()) saved[item.key()] = item.value().detach().clone();
  const torch::Tensor rng = at::detail::getDefaultCPUGenerator().get_state();
  auto restore = [&] {
    torch::NoGradGuard no_grad;
    for (const auto& item : module.named_parameters()) item.value().detach().copy_(saved.at(item.key()));
    for (const auto& item : module.named_buffers()) item.value().detach().copy_(saved.at(item.key()));
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  };
  TrainerOptions sweep = options_;
  sweep.max_steps(options.num_training_steps())
      .max_epochs(-1)
      .limit_val_batches(int64_t{0})
      .num_sanity_val_steps(0)
      .enable_checkpointing(false)
      .logger(false)
      .enable_progress_bar(false);
  try {
    Trainer trainer(sweep, {finder});
    trainer.fit(module, data);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return finder;
}

}  // namespace fulgur
