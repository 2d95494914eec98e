#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {

check::Result GradientAccumulationSchedulerOptions::check_scheduling(const AccumulationSchedule& scheduling) {
  if (scheduling.empty()) return "must map at least one epoch to a factor";
  for (const auto& [epoch, factor] : scheduling) {
    if (epoch < 0) return "must have epochs >= 0";
    if (factor < 1) return "must have factors >= 1";
  }
  return std::nullopt;
}

GradientAccumulationScheduler::GradientAccumulationScheduler(GradientAccumulationSchedulerOptions options)
    : options_(std::move(options)) {
  options_.validate();
}

int64_t GradientAccumulationScheduler::factor_for(int64_t epoch) const {
  const AccumulationSchedule& scheduling = options_.scheduling();
  auto it = scheduling.upper_bound(epoch);  // first key after `epoch`
  if (it == scheduling.begin()) return 1;
  return std::prev(it)->second;
}

void GradientAccumulationScheduler::on_train_start(Trainer& trainer, LightningModule&) {
  if (trainer.config().options.accumulate_grad_batches() != 1) {
    throw std::invalid_argument(fmt::format(
        "[GradientAccumulationScheduler] the Trainer option accumulate_grad_batches is {}; leave it at 1 when the "
        "scheduler decides",
        trainer.config().options.accumulate_grad_batches()));
  }
}

void GradientAccumulationScheduler::on_train_epoch_start(Trainer& trainer, LightningModule&) {
  trainer.set_accumulate_grad_batches(factor_for(trainer.state().current_epoch()));
}

}  // namespace fulgur
