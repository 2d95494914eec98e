#include <fulgur/callbacks/early_stopping.hpp>

#include <fulgur/engine/monitored_metric.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>

namespace fulgur {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options) : options_(std::move(options)) {
  options_.validate();
  options_.min_delta(std::abs(options_.min_delta()));
  best_score_ = options_.mode() == MonitorMode::Min ? std::numeric_limits<double>::infinity()
                                         : -std::numeric_limits<double>::infinity();
}

std::string EarlyStopping::state_key() const {
  return fmt::format("EarlyStopping{{'monitor': '{}', 'mode': '{}'}}", options_.monitor(), to_string(options_.mode()));
}

CallbackState EarlyStopping::state_dict() const {
  return {{"wait_count", wait_count_},
          {"stopped_epoch", stopped_epoch_},
          {"best_score", best_score_},
          {"patience", options_.patience()}};
}

void EarlyStopping::load_state_dict(const CallbackState& state) {
  auto field = [&](const char* key) -> const torch::IValue& {
    const auto it = state.find(key);
    if (it == state.end()) {
      throw std::runtime_error(fmt::format("[EarlyStopping::load_state_dict] state of {} has no '{}'", state_key(), key));
    }
    return it->second;
  };
  wait_count_ = field("wait_count").toInt();
  stopped_epoch_ = field("stopped_epoch").toInt();
  best_score_ = field("best_score").toDouble();
}

void EarlyStopping::setup(Trainer& trainer, LightningModule&) {
  // Lightning's rule: validation once per epoch at its end means the epoch-end
  // check sees fresh validation metrics; otherwise check after each validation.
  const TrainerOptions& o = trainer.config().options;
  check_on_train_epoch_end_ = options_.check_on_train_epoch_end().value_or(
      o.val_check_interval().is_fraction() && o.val_check_interval().value() == 1.0 && o.check_val_every_n_epoch() &&
      *o.check_val_every_n_epoch() == 1);
}

void EarlyStopping::on_validation_end(Trainer& trainer, LightningModule&) {
  if (check_on_train_epoch_end_ || trainer.state().stage() != Stage::Fit || trainer.state().sanity_checking()) return;
  check(trainer);
}

void EarlyStopping::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  if (!check_on_train_epoch_end_ || trainer.state().stage() != Stage::Fit || trainer.state().sanity_checking()) return;
  check(trainer);
}

bool EarlyStopping::improves(double current, double reference) const {
  return options_.mode() == MonitorMode::Min ? current < reference : current > reference;
}

std::string EarlyStopping::evaluate(double current, bool announce) {
  const std::string& name = options_.monitor();
  if (options_.check_finite() && !std::isfinite(current)) {
    return fmt::format("Monitored metric {} = {} is not finite. Previous best value was {:.6g}. Signaling Trainer to stop.",
                       name, current, best_score_);
  }
  if (options_.stopping_threshold() && improves(current, *options_.stopping_threshold())) {
    return fmt::format("Stopping threshold reached: {} = {:.6g} {} {:.6g}. Signaling Trainer to stop.", name, current,
                       options_.mode() == MonitorMode::Min ? "<" : ">", *options_.stopping_threshold());
  }
  if (options_.divergence_threshold() && improves(*options_.divergence_threshold(), current)) {
    return fmt::format("Divergence threshold reached: {} = {:.6g} {} {:.6g}. Signaling Trainer to stop.", name, current,
                       options_.mode() == MonitorMode::Min ? ">" : "<", *options_.divergence_threshold());
  }
  const double delta = options_.mode() == MonitorMode::Min ? -options_.min_delta() : options_.min_delta();
  if (improves(current - delta, best_score_)) {
    if (options_.verbose() && announce) {
      std::cout << (std::isfinite(best_score_)
                        ? fmt::format("EarlyStopping: metric {} improved by {:.6g} >= min_delta = {}. New best score: {:.6g}",
                                      name, std::abs(best_score_ - current), options_.min_delta(), current)
                        : fmt::format("EarlyStopping: metric {} improved. New best score: {:.6g}", name, current))
                << std::endl;
    }
    best_score_ = current;
    wait_count_ = 0;
    return "";
  }
  ++wait_count_;
  if (wait_count_ >= options_.patience()) {
    return fmt::format("Monitored metric {} did not improve in the last {} records. Best score: {:.6g}. "
                       "Signaling Trainer to stop.",
                       name, wait_count_, best_score_);
  }
  return "";
}

void EarlyStopping::check(Trainer& trainer) {
  // Rank 0's value decides for everyone, so no rank stops alone (a hang in DDP).
  const std::map<std::string, double>& metrics = trainer.state().callback_metrics();
  const std::optional<double> value = monitored_value(trainer.strategy(), metrics, options_.monitor());
  if (!value) {
    const std::string message = missing_monitor_message(metrics, "[EarlyStopping] early stopping", options_.monitor());
    if (options_.strict()) throw std::runtime_error(message);
    if (!warned_missing_ && trainer.is_global_zero()) std::cerr << "warning: " << message << std::endl;
    warned_missing_ = true;
    return;
  }
  // Every rank sees the same value; rank 0 alone says so.
  const std::string reason = evaluate(*value, trainer.is_global_zero());
  if (reason.empty()) return;
  stopping_reason_ = reason;
  stopped_epoch_ = trainer.state().current_epoch();
  trainer.request_stop();
  if (options_.verbose() && trainer.is_global_zero()) std::cout << "EarlyStopping: " << reason << std::endl;
}

}  // namespace fulgur
