#include <fulgur/trainer/cli/callback_registry.hpp>

#include <fulgur/callbacks/device_stats_monitor.hpp>
#include <fulgur/callbacks/early_stopping.hpp>
#include <fulgur/callbacks/prediction_writer.hpp>
#include <fulgur/callbacks/ema_weight_averaging.hpp>
#include <fulgur/callbacks/gradient_accumulation_scheduler.hpp>
#include <fulgur/callbacks/learning_rate_monitor.hpp>
#include <fulgur/callbacks/on_exception_checkpoint.hpp>
#include <fulgur/callbacks/throughput_monitor.hpp>
#include <fulgur/callbacks/stochastic_weight_averaging.hpp>
#include <fulgur/callbacks/timer.hpp>
#include <fulgur/callbacks/model_checkpoint.hpp>
#include <fulgur/callbacks/model_summary.hpp>
#include <fulgur/callbacks/progress_bar.hpp>

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
  registry.add<EMAWeightAveraging>("EMAWeightAveraging");
  registry.add<GradientAccumulationScheduler>("GradientAccumulationScheduler");
  registry.add<LearningRateMonitor>("LearningRateMonitor");
  registry.add<ModelCheckpoint>("ModelCheckpoint");
  registry.add<ModelSummary>("ModelSummary");
  registry.add<OnExceptionCheckpoint>("OnExceptionCheckpoint");
  registry.add<ProgressBar>("ProgressBar");
  registry.add<ThroughputMonitor>("ThroughputMonitor");
  registry.add<StochasticWeightAveraging>("StochasticWeightAveraging");
  registry.add<Timer>("Timer");
  registry.add<PredictionWriter>("PredictionWriter");
  return registry;
}

}  // namespace fulgur::cli
