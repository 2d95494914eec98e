#include <fulgur/callbacks/callback_registry.hpp>

#include <fulgur/callbacks/early_stopping.hpp>
#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/learning_rate_monitor.hpp>
#include <fulgur/trainer/model_checkpoint.hpp>
#include <fulgur/trainer/progress_bar.hpp>
#include <fulgur/callbacks/timer.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fulgur {

CallbackRegistry CallbackRegistry::with_builtins() {
  CallbackRegistry registry;
  // One line per class.
  registry.add("EarlyStopping", &EarlyStopping::from_config);
  registry.add("GradientAccumulationScheduler", &GradientAccumulationScheduler::from_config);
  registry.add("LearningRateMonitor", &LearningRateMonitor::from_config);
  registry.add("ModelCheckpoint", &ModelCheckpoint::from_config);
  registry.add("ProgressBar", &ProgressBar::from_config);
  registry.add("Timer", &Timer::from_config);
  return registry;
}

void CallbackRegistry::add(const std::string& class_name, CallbackFactory factory) {
  factories_[class_name] = std::move(factory);
}

std::vector<std::string> CallbackRegistry::class_names() const {
  std::vector<std::string> names;
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

std::vector<std::shared_ptr<Callback>> CallbackRegistry::create(YAML::Node node, const std::string& path) const {
  std::vector<std::shared_ptr<Callback>> callbacks;
  if (!node.IsDefined() || node.IsNull()) return callbacks;
  if (!node.IsSequence()) {
    callbacks.push_back(create_one(node, path));
    return callbacks;
  }
  for (size_t i = 0; i < node.size(); ++i) callbacks.push_back(create_one(node[i], fmt::format("{}[{}]", path, i)));
  return callbacks;
}

std::shared_ptr<Callback> CallbackRegistry::create_one(YAML::Node entry, const std::string& path) const {
  std::string class_path;
  YAML::Node init_args;
  if (entry.IsScalar()) {
    class_path = entry.Scalar();
  } else if (entry.IsMap()) {
    for (const auto& item : entry) {
      const std::string key = item.first.as<std::string>();
      if (key != "class_path" && key != "init_args") {
        throw cli::ConfigError(fmt::format("{}: unknown key '{}' (expected class_path, init_args)", path, key));
      }
    }
    if (!entry["class_path"].IsScalar()) {
      throw cli::ConfigError(fmt::format("{}.class_path: expected a callback class name", path));
    }
    class_path = entry["class_path"].Scalar();
    init_args = entry["init_args"];
  } else {
    throw cli::ConfigError(fmt::format("{}: expected {{class_path: NAME, init_args: {{...}}}} or a class name", path));
  }
  const std::string class_name = class_path.substr(class_path.rfind('.') + 1);
  const auto found = factories_.find(class_name);
  if (found == factories_.end()) {
    throw cli::ConfigError(fmt::format("{}.class_path: unknown callback class '{}' (known: {})", path, class_path,
                                       fmt::join(class_names(), ", ")));
  }
  cli::ConfigSection section(init_args, path + ".init_args");
  std::shared_ptr<Callback> callback = found->second(section);
  const auto unread = section.unread_keys();
  if (!unread.empty()) throw cli::ConfigError(fmt::format("unknown key '{}' for {}", unread.front(), class_name));
  if (entry.IsMap()) entry["init_args"] = YAML::Clone(section.resolved());
  return callback;
}

}  // namespace fulgur
