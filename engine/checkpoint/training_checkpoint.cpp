#include <fulgur/engine/checkpoint/training_checkpoint.hpp>

#include <fulgur/modules/state_dict.hpp>
#include <fulgur/engine/checkpoint/optimizer_state.hpp>
#include <fulgur/engine/checkpoint/scheduler_state.hpp>
#include <fulgur/version.hpp>

namespace fulgur {

Checkpoint training_checkpoint(const LightningModule& module, const std::vector<OptimizerConfig>& optimizers,
                               const Precision& precision, int64_t epoch, int64_t global_step, bool weights_only) {
  Checkpoint c = new_state_dict();
  c.insert(CheckpointIO::kVersionKey, std::string(FULGUR_VERSION));
  c.insert("epoch", epoch);
  c.insert("global_step", global_step);
  Checkpoint weights = new_state_dict();
  for (const auto& entry : state_dict(module)) weights.insert(entry.key(), entry.value().detach());
  c.insert("state_dict", weights);
  c.insert("hyper_parameters", module.hparams().copy());
  if (weights_only) return c;
  c10::impl::GenericList optimizer_states(c10::AnyType::get());
  c10::impl::GenericList schedulers(c10::AnyType::get());
  // One entry per optimizer, and per scheduler in the same order (Lightning's lists).
  for (const OptimizerConfig& config : optimizers) {
    optimizer_states.push_back(optimizer_state_dict(*config.optimizer));
    if (config.lr_scheduler) schedulers.push_back(scheduler_state_dict(*config.lr_scheduler, *config.optimizer));
  }
  c.insert("optimizer_states", optimizer_states);
  c.insert("lr_schedulers", schedulers);
  c.insert("precision", precision.state_dict());
  return c;
}

}  // namespace fulgur
