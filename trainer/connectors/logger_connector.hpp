#pragma once

#include <fulgur/trainer/result_collection.hpp>

#include <map>
#include <string>
#include <vector>

namespace fulgur {

class LightningModule;
class RunContext;

/// Where what the loops reduce from log() goes: the metric maps callbacks
/// and the progress bar read (TrainerState::callback_metrics() and friends) and
/// the loggers (rank 0). Step values stay on the device until a logger step
/// or a reader needs them. Owned by the Trainer, used by its loops.
class LoggerConnector {
 public:
  explicit LoggerConnector(RunContext& context) : context_(context) {}

  /// Rank 0 claims (creates) one version_<N> per <root>/<name> the open
  /// loggers share; every rank's loggers take the same numbers.
  void claim_run_folder();
  /// Rank 0 gives the loggers the module's hyper-parameters and names the
  /// run folder once per Trainer.
  void start_loggers(LightningModule& module);

  /// Reports a finished training step. Its values stay on the device until
  /// the step goes to the loggers (`send_to_loggers`, every
  /// log_every_n_steps batches) or someone reads the metric maps.
  void report_step(std::vector<ResultCollection::StepValue> values, bool send_to_loggers);
  /// Reports epoch aggregates to the metric maps and the loggers.
  void report_epoch(const ResultCollection::Metrics& metrics);

  const std::map<std::string, double>& callback_metrics() const;
  const std::map<std::string, double>& logged_metrics() const { return logged_metrics_; }
  const std::map<std::string, double>& progress_bar_metrics() const;

 private:
  void log_to_loggers(const std::map<std::string, double>& metrics);
  /// Reads the step values not read yet into the metric maps; returns them.
  ResultCollection::Metrics read_pending_step_values() const;

  RunContext& context_;
  bool run_folder_announced_ = false;
  // Read lazily (see callback_metrics()), hence mutable.
  mutable std::map<std::string, double> callback_metrics_;
  std::map<std::string, double> logged_metrics_;
  mutable std::map<std::string, double> progress_bar_metrics_;
  /// Step values not read yet, by key (a later step's value replaces an earlier one's).
  mutable std::map<std::string, ResultCollection::StepValue> pending_step_values_;
};

}  // namespace fulgur
