#pragma once

#include <map>
#include <optional>
#include <string>

namespace fulgur {

class Strategy;

/// `callback_metrics`[name] (TrainerState::callback_metrics()) as rank 0 has it, on every rank (one broadcast
/// when several processes run), so decisions on a monitored value
/// (EarlyStopping, a ReduceLROnPlateau step) are the same everywhere;
/// nullopt when rank 0 has no such metric. Every rank must call it.
std::optional<double> monitored_value(Strategy& strategy, const std::map<std::string, double>& callback_metrics,
                                      const std::string& name);

/// "<what> conditioned on metric '<name>', which is not available;
/// available metrics: a, b" (or "none"): the message for a missing monitor.
std::string missing_monitor_message(const std::map<std::string, double>& callback_metrics, const std::string& what,
                                    const std::string& name);

}  // namespace fulgur
