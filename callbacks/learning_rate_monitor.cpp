#include <fulgur/callbacks/learning_rate_monitor.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <stdexcept>

namespace fulgur {
namespace {

struct GroupValues {
  std::optional<double> momentum;
  std::optional<double> weight_decay;
};

// LibTorch keeps per-group hyper-parameters in optimizer-specific option types.
GroupValues group_values(torch::optim::OptimizerOptions& options) {
  using namespace torch::optim;
  if (auto* o = dynamic_cast<SGDOptions*>(&options)) return {o->momentum(), o->weight_decay()};
  if (auto* o = dynamic_cast<AdamOptions*>(&options)) return {std::get<0>(o->betas()), o->weight_decay()};
  if (auto* o = dynamic_cast<AdamWOptions*>(&options)) return {std::get<0>(o->betas()), o->weight_decay()};
  if (auto* o = dynamic_cast<RMSpropOptions*>(&options)) return {o->momentum(), o->weight_decay()};
  if (auto* o = dynamic_cast<AdagradOptions*>(&options)) return {std::nullopt, o->weight_decay()};
  return {};
}

}  // namespace

LearningRateMonitor::LearningRateMonitor(LearningRateMonitorOptions options) : options_(std::move(options)) {
  options_.validate();
}

std::string LearningRateMonitor::optimizer_name(const torch::optim::Optimizer& optimizer) {
  using namespace torch::optim;
  if (dynamic_cast<const SGD*>(&optimizer)) return "SGD";
  if (dynamic_cast<const AdamW*>(&optimizer)) return "AdamW";
  if (dynamic_cast<const Adam*>(&optimizer)) return "Adam";
  if (dynamic_cast<const RMSprop*>(&optimizer)) return "RMSprop";
  if (dynamic_cast<const Adagrad*>(&optimizer)) return "Adagrad";
  if (dynamic_cast<const LBFGS*>(&optimizer)) return "LBFGS";
  return "Optimizer";
}

void LearningRateMonitor::on_train_start(Trainer& trainer, LightningModule&) {
  if (trainer.loggers().empty()) {
    throw std::invalid_argument("[LearningRateMonitor] cannot log learning rates: the Trainer has no logger");
  }
  bool any_step_scheduler = false;
  for (const auto& config : trainer.optimizers()) {
    any_step_scheduler |= config.lr_scheduler && config.lr_scheduler->interval == Interval::Step;
  }
  interval_ = options_.logging_interval().value_or(any_step_scheduler ? Interval::Step : Interval::Epoch);
}

std::map<std::string, double> LearningRateMonitor::extract(Trainer& trainer) const {
  std::map<std::string, double> values;
  // Lightning's names: lr-Adam, and lr-Adam-1 for a second Adam (a GAN's two optimizers).
  std::map<std::string, int> seen;
  for (const auto& config : trainer.optimizers()) {
    torch::optim::Optimizer& optimizer = *config.optimizer;
    const std::string type = optimizer_name(optimizer);
    const int earlier = seen[type]++;
    const std::string base = earlier == 0 ? "lr-" + type : fmt::format("lr-{}-{}", type, earlier);
    auto& groups = optimizer.param_groups();
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string name = groups.size() == 1 ? base : fmt::format("{}/pg{}", base, i + 1);
      torch::optim::OptimizerOptions& options = groups[i].options();
      values[name] = options.get_lr();
      const GroupValues extra = group_values(options);
      if (options_.log_momentum()) values[name + "-momentum"] = extra.momentum.value_or(0.0);
      if (options_.log_weight_decay()) values[name + "-weight_decay"] = extra.weight_decay.value_or(0.0);
    }
  }
  return values;
}

void LearningRateMonitor::log(Trainer& trainer) {
  if (!trainer.is_global_zero()) return;
  const int64_t step = trainer.state().global_step();
  for (const auto& logger : trainer.loggers()) logger->log_metrics(extract(trainer), step);
  last_logged_step_ = step;
}

void LearningRateMonitor::on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) {
  if (interval_ != Interval::Step) return;
  // The rate the coming optimizer step uses, once per step and every log_every_n_steps.
  const int64_t step = trainer.state().global_step();
  if (step == last_logged_step_ || step % trainer.config().options.log_every_n_steps() != 0) return;
  log(trainer);
}

void LearningRateMonitor::on_train_epoch_start(Trainer& trainer, LightningModule&) {
  if (interval_ == Interval::Epoch) log(trainer);
}

}  // namespace fulgur
