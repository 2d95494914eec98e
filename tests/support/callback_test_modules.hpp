#pragma once

// Modules and loggers the callback tests share.

#include "tiny_modules.hpp"

#include <chrono>
#include <thread>

namespace fulgur::testing {

/// Logs `val_score` = values[epoch] (the last value repeats) in every
/// validation step, so a test scripts what EarlyStopping sees.
class ScriptedScoreModule : public RecordingModule {
 public:
  explicit ScriptedScoreModule(std::vector<double> values) : values_(std::move(values)) {}
  void validation_step(const Batch& batch, int64_t idx) override {
    RecordingModule::validation_step(batch, idx);
    const auto epoch = static_cast<size_t>(trainer()->state().current_epoch());
    log("val_score", torch::tensor(values_[std::min(epoch, values_.size() - 1)]));
  }

 private:
  std::vector<double> values_;
};

/// Sleeps in every training step, so time limits are reached after a few steps.
class SlowModule : public RecordingModule {
 public:
  explicit SlowModule(int64_t step_ms) : step_ms_(step_ms) {}
  torch::Tensor training_step(const Batch& batch, int64_t idx) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(step_ms_));
    return RecordingModule::training_step(batch, idx);
  }

 private:
  int64_t step_ms_;
};

/// A logger that keeps what it is given in memory.
class MemoryLogger : public Logger {
 public:
  explicit MemoryLogger(std::filesystem::path dir) : dir_(std::move(dir)) {}
  std::string name() const override { return "memory"; }
  std::filesystem::path log_dir() override { return dir_; }
  void log_hyperparams(const YAML::Node&) override {}
  void log_metrics(const std::map<std::string, double>& metrics, int64_t step) override {
    rows.emplace_back(step, metrics);
  }
  void finalize(const std::string& status) override { statuses.push_back(status); }

  /// (step, value) of every row that has `name`.
  std::vector<std::pair<int64_t, double>> series(const std::string& name) const {
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& [step, metrics] : rows) {
      if (auto it = metrics.find(name); it != metrics.end()) out.emplace_back(step, it->second);
    }
    return out;
  }

  std::vector<std::pair<int64_t, std::map<std::string, double>>> rows;
  std::vector<std::string> statuses;

 private:
  std::filesystem::path dir_;
};

}  // namespace fulgur::testing
