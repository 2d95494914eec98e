#include <fulgur/trainer/connectors/logger_connector.hpp>

#include <fulgur/trainer/hparams_yaml.hpp>
#include <fulgur/loggers/run_folder.hpp>
#include <fulgur/trainer/loops/run_context.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <iostream>

namespace fulgur {

void LoggerConnector::claim_run_folder() {
  const auto& loggers = context_.loggers();
  Strategy& strategy = context_.strategy();
  std::vector<int64_t> versions(loggers.size(), -1);
  if (strategy.is_global_zero()) {
    std::map<std::filesystem::path, int64_t> claimed;
    for (size_t i = 0; i < loggers.size(); ++i) {
      const auto dir = loggers[i]->open_versions_dir();
      if (!dir) continue;
      if (!claimed.count(*dir)) claimed[*dir] = claim_version(*dir);
      versions[i] = claimed[*dir];
    }
  }
  if (strategy.world_size() > 1 && !versions.empty()) {
    const torch::Tensor mine = torch::tensor(versions, torch::kInt64).to(strategy.root_device());
    const torch::Tensor agreed = strategy.broadcast(mine, 0).cpu();
    for (size_t i = 0; i < versions.size(); ++i) versions[i] = agreed[static_cast<int64_t>(i)].item<int64_t>();
  }
  for (size_t i = 0; i < loggers.size(); ++i) {
    if (versions[i] >= 0) loggers[i]->set_version(versions[i]);
  }
}

void LoggerConnector::start_loggers(LightningModule& module) {
  if (context_.is_global_zero() && !context_.loggers().empty()) {
    const YAML::Node hparams = hparams_to_yaml(module.hparams());
    for (const auto& logger : context_.loggers()) logger->log_hyperparams(hparams);
    if (!run_folder_announced_) {
      std::cout << "fulgur: run folder " << context_.log_dir().string() << std::endl;
      run_folder_announced_ = true;
    }
  }
}

void LoggerConnector::log_to_loggers(const std::map<std::string, double>& metrics) {
  if (metrics.empty() || !context_.is_global_zero()) return;
  auto row = metrics;
  row["epoch"] = static_cast<double>(context_.current_epoch());
  for (const auto& logger : context_.loggers()) logger->log_metrics(row, context_.global_step());
}

ResultCollection::Metrics LoggerConnector::read_pending_step_values() const {
  if (pending_step_values_.empty()) return {};
  std::vector<ResultCollection::StepValue> values;
  values.reserve(pending_step_values_.size());
  for (auto& [key, value] : pending_step_values_) values.push_back(std::move(value));
  pending_step_values_.clear();
  const ResultCollection::Metrics metrics = ResultCollection::read(values);
  for (const auto& [k, v] : metrics.callback) callback_metrics_[k] = v;
  for (const auto& [k, v] : metrics.prog_bar) progress_bar_metrics_[k] = v;
  return metrics;
}

const std::map<std::string, double>& LoggerConnector::callback_metrics() const {
  read_pending_step_values();
  return callback_metrics_;
}

const std::map<std::string, double>& LoggerConnector::progress_bar_metrics() const {
  read_pending_step_values();
  return progress_bar_metrics_;
}

void LoggerConnector::report_step(std::vector<ResultCollection::StepValue> values, bool send_to_loggers) {
  std::vector<std::string> logged;
  for (auto& value : values) {
    if (send_to_loggers && value.options.logger) logged.push_back(value.key);
    std::string key = value.key;
    pending_step_values_.insert_or_assign(std::move(key), std::move(value));
  }
  if (!send_to_loggers) return;
  // Earlier unread steps' values are read in the same copy; the loggers get this step's.
  const ResultCollection::Metrics metrics = read_pending_step_values();
  std::map<std::string, double> row;
  for (const auto& key : logged) row[key] = metrics.logger.at(key);
  for (const auto& [k, v] : row) logged_metrics_[k] = v;
  log_to_loggers(row);
}

void LoggerConnector::report_epoch(const ResultCollection::Metrics& metrics) {
  read_pending_step_values();  // older than the epoch values, which must win
  for (const auto& [k, v] : metrics.callback) callback_metrics_[k] = v;
  for (const auto& [k, v] : metrics.prog_bar) progress_bar_metrics_[k] = v;
  for (const auto& [k, v] : metrics.logger) logged_metrics_[k] = v;
  log_to_loggers(metrics.logger);
  if (context_.is_global_zero()) {
    for (const auto& logger : context_.loggers()) logger->save();
  }
}

}  // namespace fulgur
