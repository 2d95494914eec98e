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
  /// End of a run: "success" or "failed".
  virtual void finalize(const std::string& status) {
    (void)status;
    save();
  }
};

}  // namespace fulgur
