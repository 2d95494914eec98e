#pragma once

#include <optional>
#include <string>

namespace fulgur {

class Trainer;

/// callback_metrics()[name] as rank 0 has it, on every rank (one broadcast
/// when several processes run), so decisions on a monitored value
/// (EarlyStopping, a ReduceLROnPlateau step) are the same everywhere;
/// nullopt when rank 0 has no such metric. Every rank must call it.
std::optional<double> monitored_value(Trainer& trainer, const std::string& name);

/// "<what> conditioned on metric '<name>', which is not available;
/// available metrics: a, b" (or "none"): the message for a missing monitor.
std::string missing_monitor_message(const Trainer& trainer, const std::string& what, const std::string& name);

}  // namespace fulgur
