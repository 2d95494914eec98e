#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace fulgur {

/// Where metrics and hyper-parameters go. The Trainer calls loggers on
/// global rank 0 only. A logger owns a run folder
/// `<root>/<name>/version_<N>/`, created on first use.
class Logger {
 public:
  virtual ~Logger() = default;

  virtual std::string name() const = 0;
  /// The run folder (decides the version on first call; creates nothing).
  virtual std::filesystem::path log_dir() = 0;
  virtual void log_hyperparams(const YAML::Node& hparams) = 0;
  /// One row of metrics at optimizer step `step`.
  virtual void log_metrics(const std::map<std::string, double>& metrics, int64_t step) = 0;
  /// Makes everything logged so far durable.
  virtual void save() {}
  /// Where the logger stands, for checkpoints (CSVLogger: its version and
  /// the rows written), so a resumed run continues the same files.
  virtual std::map<std::string, int64_t> state_dict() { return {}; }
  /// Restores state_dict() before the run logs anything.
  virtual void load_state_dict(const std::map<std::string, int64_t>& state) { (void)state; }
  /// End of a run: "success" or "failed".
  virtual void finalize(const std::string& status) {
    (void)status;
    save();
  }
};

}  // namespace fulgur
