#include <fulgur/engine/checkpoint/scheduler_state.hpp>

#include <fulgur/engine/checkpoint/checkpoint_error.hpp>
#include <fulgur/engine/checkpoint/checkpoint_io.hpp>

#include <fmt/format.h>

namespace fulgur {
namespace {

using Dict = c10::impl::GenericDict;
using Plateau = torch::optim::ReduceLROnPlateauScheduler;

/// LRScheduler keeps its step count protected and has no setter; a derived
/// type may name the member, and the pointer works on any scheduler.
struct SchedulerAccess : torch::optim::LRScheduler {
  static unsigned& step_count(torch::optim::LRScheduler& scheduler) {
    return scheduler.*(&SchedulerAccess::step_count_);
  }
};

/// ReduceLROnPlateauScheduler keeps its counters private and has neither a
/// state_dict nor setters. An explicit instantiation may name private
/// members ([temp.spec.general]), which hands out pointers to them.
template <typename Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member(Tag) { return Member; }
};
struct Best {
  using type = float Plateau::*;
  friend type member(Best);
};
struct BadEpochs {
  using type = int Plateau::*;
  friend type member(BadEpochs);
};
struct Cooldown {
  using type = int Plateau::*;
  friend type member(Cooldown);
};
struct LastEpoch {
  using type = int Plateau::*;
  friend type member(LastEpoch);
};
template struct Expose<Best, &Plateau::best>;
template struct Expose<BadEpochs, &Plateau::num_bad_epochs>;
template struct Expose<Cooldown, &Plateau::cooldown_counter>;
template struct Expose<LastEpoch, &Plateau::last_epoch>;

c10::IValue require(const Dict& state, const char* key, const std::string& source) {
  if (!state.contains(key)) {
    throw CheckpointError(fmt::format("[CheckpointConnector] {}: the lr_schedulers entry has no '{}' (saved by "
                                      "another kind of scheduler than configure_optimizers returns now?)",
                                      source, key));
  }
  return state.at(key);
}

}  // namespace

Dict scheduler_state_dict(const LRSchedulerConfig& config, torch::optim::Optimizer& optimizer) {
  Dict state = new_state_dict();
  if (config.plateau) {
    Plateau& p = *config.plateau;
    state.insert("best", static_cast<double>(p.*member(Best{})));
    state.insert("num_bad_epochs", static_cast<int64_t>(p.*member(BadEpochs{})));
    state.insert("cooldown_counter", static_cast<int64_t>(p.*member(Cooldown{})));
    state.insert("last_epoch", static_cast<int64_t>(p.*member(LastEpoch{})));
  } else {
    state.insert("_step_count", static_cast<int64_t>(SchedulerAccess::step_count(*config.scheduler)));
  }
  c10::impl::GenericList lrs(c10::AnyType::get());
  for (const auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  state.insert("_last_lr", lrs);
  return state;
}

void load_scheduler_state_dict(const LRSchedulerConfig& config, const Dict& state, const std::string& source) {
  if (config.plateau) {
    Plateau& p = *config.plateau;
    p.*member(Best{}) = static_cast<float>(require(state, "best", source).toDouble());
    p.*member(BadEpochs{}) = static_cast<int>(require(state, "num_bad_epochs", source).toInt());
    p.*member(Cooldown{}) = static_cast<int>(require(state, "cooldown_counter", source).toInt());
    p.*member(LastEpoch{}) = static_cast<int>(require(state, "last_epoch", source).toInt());
    return;
  }
  SchedulerAccess::step_count(*config.scheduler) = static_cast<unsigned>(require(state, "_step_count", source).toInt());
}

}  // namespace fulgur
