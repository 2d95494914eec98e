#pragma once

#include <fulgur/loggers/logger.hpp>

#include <optional>
#include <set>
#include <vector>

namespace fulgur {

/// Writes `hparams.yaml` and `metrics.csv` into the run folder
/// `<root_dir>/<name>/version_<N>/` (N: one past the highest existing
/// version unless given). metrics.csv has the columns `epoch`, `step`, then
/// every metric name seen, sorted; a row leaves metrics it lacks empty.
class CSVLogger : public Logger {
 public:
  explicit CSVLogger(std::filesystem::path root_dir, std::string name = "fulgur_logs",
                     std::optional<int64_t> version = std::nullopt);

  std::string name() const override { return name_; }
  std::filesystem::path log_dir() override;
  int64_t version();
  std::optional<std::filesystem::path> open_versions_dir() override {
    return version_ ? std::nullopt : std::optional<std::filesystem::path>(root_dir_ / name_);
  }
  void set_version(int64_t version) override { version_ = version; }
  void log_hyperparams(const YAML::Node& hparams) override;
  void log_metrics(const std::map<std::string, double>& metrics, int64_t step) override;
  void save() override;
  /// {"version", "rows"}: the rows written so far (saved first).
  std::map<std::string, int64_t> state_dict() override;
  /// Continues version `version`: keeps the first `rows` rows of its
  /// metrics.csv and appends after them. Writes nothing itself (every rank
  /// calls it): the next save() rewrites the file with the kept rows,
  /// dropping rows logged after the checkpoint.
  void load_state_dict(const std::map<std::string, int64_t>& state) override;

  std::filesystem::path metrics_file() { return log_dir() / "metrics.csv"; }

 private:
  void write_all();
  void append_pending();
  std::vector<std::string> columns() const;

  std::filesystem::path root_dir_;
  std::string name_;
  std::optional<int64_t> version_;
  std::vector<std::map<std::string, double>> rows_;  // every row logged, for rewrites
  std::set<std::string> metric_names_;
  size_t rows_written_ = 0;
  std::vector<std::string> written_columns_;
};

}  // namespace fulgur
