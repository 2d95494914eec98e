#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>
#include <fulgur/trainer/monitor_mode.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace fulgur {

/// Options of a ModelCheckpoint, with Lightning's names and defaults.
#define FULGUR_MODEL_CHECKPOINT_OPTIONS(X)                                                                           \
  X(std::string, dirpath, "", "folder for the files; empty: <run folder>/checkpoints", fulgur::check::Any{})         \
  X(std::string, filename, "",                                                                                       \
    "file name template without .ckpt: {name} or {name:fmt} (fmt as in fmt::format, e.g. .3f) becomes "              \
    "name=<value> for epoch, step and any logged metric; empty: {epoch}-{step}",                                     \
    fulgur::check::Any{})                                                                                            \
  X(std::string, monitor, "", "metric to rank checkpoints by; empty: the newest is best", fulgur::check::Any{})      \
  X(fulgur::MonitorMode, mode, fulgur::MonitorMode::Min, "min: lower is better; max: higher is better",              \
    fulgur::check::Any{})                                                                                            \
  X(int64_t, save_top_k, 1, "keep the best k files; -1 keeps all, 0 none (only last.ckpt)",                          \
    fulgur::check::NoLimitOrAtLeast{0})                                                                              \
  X(bool, save_last, false, "also write last.ckpt on every save and when training stops", fulgur::check::Any{})      \
  X(int64_t, every_n_train_steps, 0, "save every n optimizer steps (0: off)", fulgur::check::AtLeast{0})             \
  X(std::optional<int64_t>, every_n_epochs, std::nullopt,                                                            \
    "save at the end of every n-th training epoch (0: off); null: 1 unless every_n_train_steps or "                  \
    "train_time_interval is set",                                                                                    \
    fulgur::check::AtLeast{0})                                                                                       \
  X(double, train_time_interval, 0.0, "save when this many seconds of training passed since the last save (0: off)", \
    fulgur::check::AtLeast{0})                                                                                       \
  X(bool, save_on_exception, false,                                                                                  \
    "when training fails, save a checkpoint of the state it reached (and last.ckpt with save_last)",                 \
    fulgur::check::Any{})                                                                                            \
  X(bool, save_weights_only, false, "write the model's weights only (no optimizer, loops, RNG): not resumable",      \
    fulgur::check::Any{})

struct ModelCheckpointOptions {
  FULGUR_OPTIONS(ModelCheckpointOptions, FULGUR_MODEL_CHECKPOINT_OPTIONS)
};

/// Saves checkpoints during fit: at epoch ends, every n steps or every so
/// many seconds, keeps the best `save_top_k` by a monitored metric, and
/// optionally `last.ckpt`. Decisions use rank 0's metric value, broadcast
/// through the Strategy, so every process decides the same; rank 0 writes.
/// Its table of best files is callback state, saved in the checkpoints.
class ModelCheckpoint : public Callback {
 public:
  using Options = ModelCheckpointOptions;
  explicit ModelCheckpoint(ModelCheckpointOptions options = {});

  /// Runs its epoch-end hook after the epoch's metrics are reported, so a
  /// monitored epoch aggregate is current.
  bool monitors_metrics() const override { return true; }
  std::string state_key() const override;
  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;

  void setup(Trainer& trainer, LightningModule& module) override;
  void on_train_start(Trainer& trainer, LightningModule& module) override;
  void on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& loss, const Batch& batch,
                          int64_t batch_idx) override;
  void on_train_epoch_end(Trainer& trainer, LightningModule& module) override;
  void on_train_end(Trainer& trainer, LightningModule& module) override;
  void on_exception(Trainer& trainer, LightningModule& module, const std::exception_ptr& error) override;

  /// The folder files go to (resolved at setup when not given).
  const std::filesystem::path& dirpath() const { return dirpath_; }
  const std::string& best_model_path() const { return best_model_path_; }
  /// The best model path a ModelCheckpoint recorded in `state` (its
  /// state_dict()), empty when none: how a new process learns "best".
  static std::string best_model_path_in(const CallbackState& state);
  std::optional<double> best_model_score() const { return best_model_score_; }
  const std::string& last_model_path() const { return last_model_path_; }
  /// Best files kept so far and their scores.
  const std::map<std::string, double>& best_k_models() const { return best_k_models_; }
  const ModelCheckpointOptions& options() const { return options_; }

  /// The file name (without folder) `template_text` gives for these values.
  static std::string format_filename(const std::string& template_text, int64_t epoch, int64_t step,
                                     const std::map<std::string, double>& metrics);

 private:
  /// Saves a ranked file and/or last.ckpt for the current step.
  void save(Trainer& trainer, bool ranked);
  bool better(double candidate, double reference) const;
  std::string worst_path() const;

  ModelCheckpointOptions options_;
  std::filesystem::path dirpath_;
  std::map<std::string, double> best_k_models_;
  std::string best_model_path_;
  std::optional<double> best_model_score_;
  std::string last_model_path_;
  int64_t last_saved_step_ = -1;
  std::chrono::steady_clock::time_point last_time_save_;
  bool warned_missing_monitor_ = false;
};

}  // namespace fulgur
