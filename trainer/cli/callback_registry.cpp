#include <fulgur/trainer/cli/callback_registry.hpp>

#include <fulgur/callbacks/device_stats_monitor.hpp>
#include <fulgur/callbacks/early_stopping.hpp>
#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/learning_rate_monitor.hpp>
#include <fulgur/callbacks/on_exception_checkpoint.hpp>
#include <fulgur/callbacks/throughput_monitor.hpp>
#include <fulgur/callbacks/timer.hpp>
#include <fulgur/trainer/model_checkpoint.hpp>
#include <fulgur/trainer/model_summary.hpp>
#include <fulgur/trainer/progress_bar.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fulgur {

bool decode_scalar(const YAML::Node& node, TimerDuration& out) {
  double seconds = 0.0;
  if (node.IsMap()) {
    const std::map<std::string, double> unit_seconds{{"days", 86400}, {"hours", 3600}, {"minutes", 60}, {"seconds", 1}};
    for (const auto& item : node) {
      const auto unit = unit_seconds.find(item.first.Scalar());
      double count = 0.0;
      if (unit == unit_seconds.end() || !cli::detail::decode_scalar(item.second, count)) return false;
      seconds += count * unit->second;
    }
  } else if (node.IsScalar() && node.Scalar().find(':') != std::string::npos) {
    try {
      seconds = Timer::parse_duration(node.Scalar());
    } catch (const std::invalid_argument&) {
      return false;
    }
  } else if (!cli::detail::decode_scalar(node, seconds)) {
    return false;
  }
  out = seconds;
  return true;
}

const char* expected_of(const TimerDuration*) { return "seconds, \"DD:HH:MM:SS\" or {days, hours, minutes, seconds}"; }

}  // namespace fulgur

namespace YAML {
Node convert<fulgur::TimerDuration>::encode(const fulgur::TimerDuration& duration) { return Node(duration.seconds()); }
}  // namespace YAML

namespace fulgur::cli {

CallbackRegistry CallbackRegistry::with_builtins() {
  CallbackRegistry registry;
  registry.add<DeviceStatsMonitor>("DeviceStatsMonitor");
  registry.add<EarlyStopping>("EarlyStopping");
  registry.add<GradientAccumulationScheduler>("GradientAccumulationScheduler");
  registry.add<LearningRateMonitor>("LearningRateMonitor");
  registry.add<ModelCheckpoint>("ModelCheckpoint");
  registry.add<ModelSummary>("ModelSummary");
  registry.add<OnExceptionCheckpoint>("OnExceptionCheckpoint");
  registry.add<ProgressBar>("ProgressBar");
  registry.add<ThroughputMonitor>("ThroughputMonitor");
  registry.add<Timer>("Timer");
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
        throw ConfigError(fmt::format("{}: unknown key '{}' (expected class_path, init_args)", path, key));
      }
    }
    if (!entry["class_path"].IsScalar()) {
      throw ConfigError(fmt::format("{}.class_path: expected a callback class name", path));
    }
    class_path = entry["class_path"].Scalar();
    init_args = entry["init_args"];
  } else {
    throw ConfigError(fmt::format("{}: expected {{class_path: NAME, init_args: {{...}}}} or a class name", path));
  }
  const std::string class_name = class_path.substr(class_path.rfind('.') + 1);
  const auto found = factories_.find(class_name);
  if (found == factories_.end()) {
    throw ConfigError(fmt::format("{}.class_path: unknown callback class '{}' (known: {})", path, class_path,
                                  fmt::join(class_names(), ", ")));
  }
  ConfigSection section(init_args, path + ".init_args");
  std::shared_ptr<Callback> callback = found->second(section);
  const auto unread = section.unread_keys();
  if (!unread.empty()) throw ConfigError(fmt::format("unknown key '{}' for {}", unread.front(), class_name));
  if (entry.IsMap()) entry["init_args"] = YAML::Clone(section.resolved());
  return callback;
}

}  // namespace fulgur::cli
