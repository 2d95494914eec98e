#pragma once

#include <fulgur/loggers/event_file_writer.hpp>
#include <fulgur/loggers/logger.hpp>

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// Writes TensorBoard event files (`events.out.tfevents.*`) and
/// `hparams.yaml` into the run folder `<root_dir>/<name>/version_<N>/`, the
/// same folder CSVLogger would use. Scalars go in as TensorBoard scalars
/// (tag = metric name, step = optimizer step); the hyper-parameters, flattened
/// to dotted names (`trainer.max_epochs`), go to the hparams plugin so the
/// HPARAMS tab lists the run with its metrics and its end status
/// (session_start_info at log_hyperparams, session_end_info at finalize).
/// log_histograms() adds weight histograms on request.
///
/// Records are written by a background thread (EventFileWriter): logging
/// only encodes a few bytes and queues them. save() and finalize() wait
/// until everything is on disk. Nothing is created before the first record.
class TensorBoardLogger : public Logger {
 public:
  explicit TensorBoardLogger(std::filesystem::path root_dir, std::string name = "fulgur_logs",
                             std::optional<int64_t> version = std::nullopt);

  /// Records held in memory before logging waits for the disk (default 100).
  TensorBoardLogger& max_queue(size_t records);
  /// Seconds between automatic flushes of the event file (default 10).
  TensorBoardLogger& flush_secs(double seconds);
  /// Metrics the HPARAMS tab shows beside the hyper-parameters (written as
  /// the plugin's experiment record). Default: none chosen, and TensorBoard
  /// shows every scalar tag of the runs in its log folder.
  TensorBoardLogger& hparams_metrics(std::vector<std::string> tags);

  std::string name() const override { return name_; }
  std::filesystem::path log_dir() override;
  int64_t version();
  std::optional<std::filesystem::path> open_versions_dir() override {
    return version_ ? std::nullopt : std::optional<std::filesystem::path>(root_dir_ / name_);
  }
  void set_version(int64_t version) override { version_ = version; }
  void log_hyperparams(const YAML::Node& hparams) override;
  void log_metrics(const std::map<std::string, double>& metrics, int64_t step) override;
  /// A histogram of `values` (any shape, any floating or integer dtype, any
  /// device) under `tag`; non-finite values are left out.
  void log_histogram(const std::string& tag, const torch::Tensor& values, int64_t step);
  /// One histogram per parameter of `module`, tagged with its dotted name.
  void log_histograms(const torch::nn::Module& module, int64_t step);
  void save() override;
  /// Records the run's end in the hparams plugin ("success", "failed";
  /// anything else is recorded as unknown) and closes the event file. A
  /// later record starts a new event file in the same folder.
  void finalize(const std::string& status) override;

  /// The event file being written, or the last one closed; empty before any.
  const std::filesystem::path& event_file() const { return event_file_; }

 private:
  EventFileWriter& writer();
  void write_event(int64_t step, const std::string& summary);
  void write_experiment();

  std::filesystem::path root_dir_;
  std::string name_;
  std::optional<int64_t> version_;
  size_t max_queue_ = 100;
  double flush_secs_ = 10.0;
  std::vector<std::string> hparams_metrics_;

  std::unique_ptr<EventFileWriter> writer_;
  std::filesystem::path event_file_;
  // Flattened hyper-parameters of the current run: name -> YAML scalar text.
  std::vector<std::pair<std::string, std::string>> hparams_;
  bool hparams_logged_ = false;
};

}  // namespace fulgur
