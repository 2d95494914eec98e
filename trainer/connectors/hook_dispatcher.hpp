#pragma once

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/engine/step_engine.hpp>
#include <fulgur/trainer/profilers/profiler.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <memory>
#include <string>
#include <vector>

namespace fulgur {

/// The one place hooks are dispatched: every callback's hook, then the
/// module's, each timed by the profiler when one runs. Owned by the Trainer
/// and reached through the RunContext; not part of the Trainer's face. It
/// holds the Trainer only to hand it to the callbacks' hooks. It is the
/// Trainer's StepEngine::Hooks: a step's hooks reach callbacks and module.
class HookDispatcher : public StepEngine::Hooks {
 public:
  HookDispatcher(Trainer& trainer, const std::vector<std::shared_ptr<Callback>>& callbacks, RunContext& context)
      : trainer_(trainer), callbacks_(callbacks), context_(context) {}

  /// The profiler (null when off) and the module whose hooks run, set when a run starts.
  void start_run(Profiler* profiler, LightningModule& module);

  /// Calls `callback_hook` on every callback, then `module_hook` on the
  /// module, with the same trailing arguments. `hook` names it for the
  /// profiler. First, SignalConnector::check() may throw StopSignalError.
  template <class... CallbackArgs, class... ModuleArgs, class... Args>
  void call_hook(const char* hook, void (Callback::*callback_hook)(Trainer&, LightningModule&, CallbackArgs...),
                 void (LightningModule::*module_hook)(ModuleArgs...), Args&&... args) {
    context_.check_signals();  // a stop signal nothing else will act on ends the run here
    call_callback_hook(hook, callback_hook, args...);
    ProfileScope scope(profiler_, [&] { return "[LightningModule]" + module_name_ + "." + hook; });
    context_.at(hook);
    (module_->*module_hook)(args...);
  }

  // StepEngine::Hooks: the step's hooks, callbacks first, then the module.
  void before_backward(const torch::Tensor& loss) override {
    call_hook("on_before_backward", &Callback::on_before_backward, &LightningModule::on_before_backward, loss);
  }
  void after_backward() override {
    call_hook("on_after_backward", &Callback::on_after_backward, &LightningModule::on_after_backward);
  }
  void before_optimizer_step(torch::optim::Optimizer& optimizer) override {
    call_hook("on_before_optimizer_step", &Callback::on_before_optimizer_step,
              &LightningModule::on_before_optimizer_step, optimizer);
  }

  /// Calls a hook that exists on callbacks only.
  template <class... CallbackArgs, class... Args>
  void call_callback_hook(const char* hook,
                          void (Callback::*callback_hook)(Trainer&, LightningModule&, CallbackArgs...),
                          Args&&... args) {
    for (auto& callback : callbacks_) call_one(*callback, hook, callback_hook, args...);
  }

  /// Calls a hook on the callbacks that monitor metrics (`monitoring` true)
  /// or on the others; see Callback::monitors_metrics.
  template <class... CallbackArgs, class... Args>
  void call_callback_hook_where(bool monitoring, const char* hook,
                                void (Callback::*callback_hook)(Trainer&, LightningModule&, CallbackArgs...),
                                Args&&... args) {
    for (auto& callback : callbacks_) {
      if (callback->monitors_metrics() == monitoring) call_one(*callback, hook, callback_hook, args...);
    }
  }

 private:
  template <class... CallbackArgs, class... Args>
  void call_one(Callback& callback, const char* hook,
                void (Callback::*callback_hook)(Trainer&, LightningModule&, CallbackArgs...), Args&&... args) {
    ProfileScope scope(profiler_, [&] { return "[Callback]" + callback.state_key() + "." + hook; });
    context_.at(hook);
    (callback.*callback_hook)(trainer_, *module_, args...);
  }

  Trainer& trainer_;
  const std::vector<std::shared_ptr<Callback>>& callbacks_;
  RunContext& context_;
  Profiler* profiler_ = nullptr;
  LightningModule* module_ = nullptr;
  /// The module's class name, for the profiler's action names.
  std::string module_name_;
};

}  // namespace fulgur
