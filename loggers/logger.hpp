#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// Where metrics and hyper-parameters go. The Trainer calls loggers on
/// global rank 0 only. A logger owns a run folder
/// `<root>/<name>/version_<N>/`; a version not given is claimed when a run
/// starts (open_versions_dir, set_version).
class Logger {
 public:
  virtual ~Logger() = default;

  virtual std::string name() const = 0;
  /// The run folder (a logger used without a Trainer claims its version on
  /// the first call).
  virtual std::filesystem::path log_dir() = 0;
  /// `<root>/<name>` while the version is still open (not given, set or
  /// restored); nullopt once it is decided or for a logger without versions.
  /// The Trainer claims one version there for every logger sharing it.
  virtual std::optional<std::filesystem::path> open_versions_dir() { return std::nullopt; }
  /// The version claimed for this run (on every rank, the same).
  virtual void set_version(int64_t version) { (void)version; }
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
