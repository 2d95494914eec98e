#include <fulgur/trainer/loops/fit_loop.hpp>

#include <fulgur/strategies/strategy.hpp>
#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/trainer_config.hpp>

#include <fmt/format.h>

#include <iostream>
#include <stdexcept>

namespace fulgur {

FitLoop::FitLoop(RunContext& context) : context_(context), epoch_loop_(context) {}

int64_t FitLoop::current_epoch() const { return context_.current_epoch(); }

std::string FitLoop::limit_reached() const {
  const TrainerConfig& c = context_.config();
  const int64_t max_steps = c.options.max_steps();
  if (max_steps != -1 && context_.global_step() >= max_steps) return fmt::format("max_steps={}", max_steps);
  if (c.max_epochs != -1 && current_epoch() >= c.max_epochs) return fmt::format("max_epochs={}", c.max_epochs);
  return "";
}

bool FitLoop::done() const {
  if (!limit_reached().empty() || context_.stop_signal() != 0) return true;
  return context_.should_stop() && current_epoch() >= context_.config().options.min_epochs();
}

void FitLoop::run(DataLoader& train, const std::vector<std::shared_ptr<DataLoader>>& val) {
  const TrainerOptions& o = context_.config().options;
  const int64_t num_batches = o.limit_train_batches().limit(train.size(), "limit_train_batches");
  std::vector<int64_t> num_val_batches;
  int64_t total_val_batches = 0;
  for (const auto& loader : val) {
    num_val_batches.push_back(o.limit_val_batches().limit(loader->size(), "limit_val_batches"));
    total_val_batches += num_val_batches.back();
  }
  // Every rank validates if any has a batch (evaluation shards are not padded).
  const std::vector<std::shared_ptr<DataLoader>> validated =
      context_.strategy().max_over_ranks(total_val_batches) > 0 ? val : std::vector<std::shared_ptr<DataLoader>>{};
  if (!o.val_check_interval().is_fraction() && o.check_val_every_n_epoch() && !val.empty() &&
      o.val_check_interval().count() > num_batches) {
    throw std::invalid_argument(fmt::format(
        "[FitLoop::run] val_check_interval ({}) must not exceed the number of training batches ({}) unless "
        "check_val_every_n_epoch is null",
        o.val_check_interval().count(), num_batches));
  }

  // A second fit, or a resume from the end: say why nothing runs, as Lightning does.
  const std::string limit = limit_reached();
  if (!limit.empty() && context_.is_global_zero()) {
    std::cout << "fulgur: fit has nothing to do: " << limit << " reached" << std::endl;
  }
  context_.hooks().call_hook("on_train_start", &Callback::on_train_start, &LightningModule::on_train_start);
  while (!done()) {
    train.set_epoch(current_epoch());
    for (const auto& loader : val) loader->set_epoch(current_epoch());
    epoch_loop_.run(train, num_batches, validated, num_val_batches);
    context_.epoch_progress().increment();
  }
  context_.hooks().call_hook("on_train_end", &Callback::on_train_end, &LightningModule::on_train_end);
}

c10::impl::GenericDict FitLoop::state_dict() const {
  // Inside an epoch, or after one cut short by a stop, the position is that
  // epoch's; after a complete epoch it is the start of the next.
  const int64_t epochs = context_.epoch_progress().total;
  const bool mid_epoch = epoch_loop_.running() || (!epoch_loop_.epoch_complete() && epochs > 0);
  const int64_t epoch = epoch_loop_.running() ? epochs : mid_epoch ? epochs - 1 : epochs;
  auto state = c10::impl::GenericDict(c10::StringType::get(), c10::AnyType::get());
  state.insert("epoch", epoch);
  state.insert("batch_in_epoch", mid_epoch ? epoch_loop_.batch_progress().current : int64_t{0});
  state.insert("epoch_loop", epoch_loop_.state_dict());
  return state;
}

void FitLoop::load_state_dict(const c10::impl::GenericDict& state) {
  Progress& epochs = context_.epoch_progress();
  epochs.total = epochs.current = state.at("epoch").toInt();
  epoch_loop_.load_state_dict(state.at("epoch_loop").toGenericDict(), state.at("batch_in_epoch").toInt());
}

}  // namespace fulgur
