// fulgur::HookDispatcher: every callback's hook in the order the Trainer
// holds them, then the module's, with the same arguments, each timed by the
// profiler under its own name; metric-monitoring callbacks apart.
#include "support/test_support.hpp"
#include "support/tiny_modules.hpp"

#include <fulgur/trainer/connectors/hook_dispatcher.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

namespace hook_dispatcher_test {

using namespace fulgur;
using fulgur::testing::TempDir;

namespace {

using Log = std::vector<std::string>;

class NamedCallback : public Callback {
 public:
  NamedCallback(std::string name, Log& log, bool monitors = false)
      : name_(std::move(name)), log_(log), monitors_(monitors) {}
  std::string state_key() const override { return name_; }
  bool monitors_metrics() const override { return monitors_; }
  void on_fit_start(Trainer&, LightningModule&) override { log_.push_back(name_ + ".on_fit_start"); }
  void on_train_epoch_end(Trainer&, LightningModule&) override { log_.push_back(name_ + ".on_train_epoch_end"); }
  void on_before_optimizer_step(Trainer&, LightningModule&, torch::optim::Optimizer& optimizer) override {
    log_.push_back(name_ + ".step lr " + std::to_string(optimizer.param_groups()[0].options().get_lr()));
  }

 private:
  std::string name_;
  Log& log_;
  bool monitors_;
};

class LoggingModule : public testing::RecordingModule {
 public:
  explicit LoggingModule(Log& log) : log_(log) {}
  void on_fit_start() override { log_.push_back("module.on_fit_start"); }
  void on_before_optimizer_step(torch::optim::Optimizer& optimizer) override {
    log_.push_back("module.step lr " + std::to_string(optimizer.param_groups()[0].options().get_lr()));
  }

 private:
  Log& log_;
};

/// Records the actions it times, in order.
class RecordingProfiler : public Profiler {
 public:
  void start(const std::string& action) override { actions.push_back("start " + action); }
  void stop(const std::string& action) override { actions.push_back("stop " + action); }
  std::filesystem::path write(const std::filesystem::path&, int64_t) override { return ""; }
  Log actions;
};

}  // namespace

TEST_CASE("hook_dispatcher: callbacks in their order first, then the module, with the same arguments") {
  TempDir dir("hook-dispatcher");
  Log log;
  std::vector<std::shared_ptr<Callback>> callbacks{std::make_shared<NamedCallback>("first", log),
                                                   std::make_shared<NamedCallback>("second", log)};
  Trainer trainer(testing::quiet_options(dir.path().string()).logger(false).enable_checkpointing(false));
  LoggingModule module(log);
  RunContext context(trainer.config(), trainer.strategy(), callbacks, trainer.loggers(), nullptr);
  HookDispatcher hooks(trainer, callbacks, context);
  hooks.start_run(nullptr, module);

  hooks.call_hook("on_fit_start", &Callback::on_fit_start, &LightningModule::on_fit_start);
  CHECK(log == Log{"first.on_fit_start", "second.on_fit_start", "module.on_fit_start"});

  log.clear();
  torch::optim::SGD optimizer(module.parameters(), torch::optim::SGDOptions(0.25));
  hooks.call_hook("on_before_optimizer_step", &Callback::on_before_optimizer_step,
                  &LightningModule::on_before_optimizer_step, static_cast<torch::optim::Optimizer&>(optimizer));
  REQUIRE(log.size() == 3);
  CHECK(log[0] == "first.step lr " + std::to_string(0.25));
  CHECK(log[2] == "module.step lr " + std::to_string(0.25));

  // A callback-only hook leaves the module alone.
  log.clear();
  hooks.call_callback_hook("on_train_epoch_end", &Callback::on_train_epoch_end);
  CHECK(log == Log{"first.on_train_epoch_end", "second.on_train_epoch_end"});
}

TEST_CASE("hook_dispatcher: callbacks that monitor metrics are called apart from the others") {
  TempDir dir("hook-dispatcher-monitoring");
  Log log;
  std::vector<std::shared_ptr<Callback>> callbacks{std::make_shared<NamedCallback>("watcher", log, true),
                                                   std::make_shared<NamedCallback>("plain", log)};
  Trainer trainer(testing::quiet_options(dir.path().string()).logger(false).enable_checkpointing(false));
  LoggingModule module(log);
  RunContext context(trainer.config(), trainer.strategy(), callbacks, trainer.loggers(), nullptr);
  HookDispatcher hooks(trainer, callbacks, context);
  hooks.start_run(nullptr, module);
  hooks.call_callback_hook_where(false, "on_train_epoch_end", &Callback::on_train_epoch_end);
  CHECK(log == Log{"plain.on_train_epoch_end"});
  hooks.call_callback_hook_where(true, "on_train_epoch_end", &Callback::on_train_epoch_end);
  CHECK(log == Log{"plain.on_train_epoch_end", "watcher.on_train_epoch_end"});
}

TEST_CASE("hook_dispatcher: a profiler times each callback's hook and the module's under their own names") {
  TempDir dir("hook-dispatcher-profiler");
  Log log;
  std::vector<std::shared_ptr<Callback>> callbacks{std::make_shared<NamedCallback>("first", log)};
  Trainer trainer(testing::quiet_options(dir.path().string()).logger(false).enable_checkpointing(false));
  LoggingModule module(log);
  RecordingProfiler profiler;
  RunContext context(trainer.config(), trainer.strategy(), callbacks, trainer.loggers(), nullptr);
  HookDispatcher hooks(trainer, callbacks, context);
  hooks.start_run(&profiler, module);
  hooks.call_hook("on_fit_start", &Callback::on_fit_start, &LightningModule::on_fit_start);
  REQUIRE(profiler.actions.size() == 4);
  CHECK(profiler.actions[0] == "start [Callback]first.on_fit_start");
  CHECK(profiler.actions[1] == "stop [Callback]first.on_fit_start");
  // The module's class name without its namespaces.
  CHECK(profiler.actions[2] == "start [LightningModule]LoggingModule.on_fit_start");
  CHECK(profiler.actions[3] == "stop [LightningModule]LoggingModule.on_fit_start");
}

}  // namespace hook_dispatcher_test
