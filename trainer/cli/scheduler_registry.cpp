#include <fulgur/trainer/cli/scheduler_registry.hpp>

#include <fulgur/trainer/monitor_mode.hpp>

#include <string>
#include <vector>

namespace fulgur::cli {
namespace {

using Plateau = torch::optim::ReduceLROnPlateauScheduler;

// ReduceLROnPlateau's threshold_mode: improvement relative to the best, or absolute.
enum class ThresholdMode { Rel, Abs };
std::vector<std::string> option_choices(ThresholdMode) { return {"rel", "abs"}; }

// Lightning's scheduler-config keys, read into `config`.
void read_when(ConfigSection& section, LRSchedulerConfig& config) {
  config.interval = section.choice("interval", Interval::Epoch);
  config.frequency = section.get<int64_t>("frequency", 1);
  if (config.frequency < 1) section.fail("frequency", "an integer >= 1", std::to_string(config.frequency));
}

}  // namespace

SchedulerRegistry SchedulerRegistry::with_builtins() {
  SchedulerRegistry registry;
  registry.add("StepLR", [](ConfigSection& s) {
    const int64_t step_size = s.require<int64_t>("step_size");
    if (step_size < 1) s.fail("step_size", "an integer >= 1", std::to_string(step_size));
    const double gamma = s.get<double>("gamma", 0.1);
    LRSchedulerConfig when;
    read_when(s, when);
    return std::make_shared<SchedulerRecipe>(SchedulerRecipe{[=](torch::optim::Optimizer& optimizer) {
      LRSchedulerConfig config = when;
      config.scheduler = std::make_shared<torch::optim::StepLR>(optimizer, static_cast<unsigned>(step_size), gamma);
      // PyTorch's constructor takes a first step (no change, count 1); LibTorch's
      // does not, and would decay one interval late. This matches PyTorch.
      config.scheduler->step();
      return config;
    }});
  });
  registry.add("ReduceLROnPlateau", [](ConfigSection& s) {
    LRSchedulerConfig when;
    when.monitor = s.require<std::string>("monitor");
    const auto mode = s.choice("mode", MonitorMode::Min) == MonitorMode::Min ? Plateau::min : Plateau::max;
    const double factor = s.get<double>("factor", 0.1);
    if (!(factor < 1.0)) s.fail("factor", "a number < 1", std::to_string(factor));
    const int64_t patience = s.get<int64_t>("patience", 10);
    const double threshold = s.get<double>("threshold", 1e-4);
    const auto threshold_mode = s.choice("threshold_mode", ThresholdMode::Rel) == ThresholdMode::Rel ? Plateau::rel
                                                                                                     : Plateau::abs;
    const int64_t cooldown = s.get<int64_t>("cooldown", 0);
    const double min_lr = s.get<double>("min_lr", 0.0);
    const double eps = s.get<double>("eps", 1e-8);
    when.strict = s.get<bool>("strict", true);
    read_when(s, when);
    return std::make_shared<SchedulerRecipe>(SchedulerRecipe{[=](torch::optim::Optimizer& optimizer) {
      LRSchedulerConfig config = when;
      const std::vector<float> min_lrs(optimizer.param_groups().size(), static_cast<float>(min_lr));
      config.plateau = std::make_shared<Plateau>(optimizer, mode, static_cast<float>(factor), static_cast<int>(patience),
                                                 threshold, threshold_mode, static_cast<int>(cooldown), min_lrs, eps);
      return config;
    }});
  });
  return registry;
}

}  // namespace fulgur::cli
