#include <fulgur/trainer/trainer_state.hpp>

#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/connectors/signal_connector.hpp>
#include <fulgur/trainer/loops/fit_loop.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/trainer.hpp>

namespace fulgur {

// Before the first run of a Trainer that starts its own ranks there is no
// context yet: nothing has run, so every count is 0.

std::optional<Stage> TrainerState::stage() const {
  return trainer_.context_ ? trainer_.context_->stage() : std::nullopt;
}

bool TrainerState::sanity_checking() const { return trainer_.context_ && trainer_.context_->sanity_checking(); }

int64_t TrainerState::global_step() const { return trainer_.context_ ? trainer_.context_->global_step() : 0; }

int64_t TrainerState::current_epoch() const { return trainer_.context_ ? trainer_.context_->current_epoch() : 0; }

int64_t TrainerState::num_training_batches() const {
  return trainer_.fit_loop_ ? trainer_.fit_loop_->epoch_loop().num_batches() : 0;
}

int64_t TrainerState::num_eval_batches() const { return trainer_.context_ ? trainer_.context_->num_eval_batches() : 0; }

int64_t TrainerState::accumulate_grad_batches() const {
  return trainer_.context_ ? trainer_.context_->accumulate_grad_batches()
                           : trainer_.config_.options.accumulate_grad_batches();
}

bool TrainerState::should_stop() const { return trainer_.context_ && trainer_.context_->should_stop(); }

int TrainerState::stop_signal() const { return trainer_.signals_->stop_signal(); }

bool TrainerState::interrupted() const { return trainer_.context_ && trainer_.context_->handling_exception(); }

bool TrainerState::stop_check_due(bool last_batch_of_epoch) const {
  return trainer_.context_ && trainer_.context_->stop_check_due(last_batch_of_epoch);
}

const std::map<std::string, double>& TrainerState::callback_metrics() const {
  static const std::map<std::string, double> kNone;  // before the first run: nothing logged
  return trainer_.logging_ ? trainer_.logging_->callback_metrics() : kNone;
}

const std::map<std::string, double>& TrainerState::progress_bar_metrics() const {
  static const std::map<std::string, double> kNone;
  return trainer_.logging_ ? trainer_.logging_->progress_bar_metrics() : kNone;
}

}  // namespace fulgur
