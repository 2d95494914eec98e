#pragma once

#include <fulgur/trainer/callback.hpp>

#include <torch/arg.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace fulgur {

namespace cli {
class ConfigSection;
}

/// Options of a ModelCheckpoint, with Lightning's names and defaults.
struct ModelCheckpointOptions {
  /// Folder for the files; empty: `<run folder>/checkpoints`.
  TORCH_ARG(std::string, dirpath) = "";
  /// File name template without ".ckpt": `{name}` or `{name:fmt}` becomes
  /// `name=<value>` (fmt as in fmt::format, e.g. `.3f`) for `epoch`, `step`
  /// and any logged metric. Empty: "{epoch}-{step}".
  TORCH_ARG(std::string, filename) = "";
  /// Metric to rank checkpoints by (a callback metric such as "val_loss");
  /// empty: rank by recency (the newest is best).
  TORCH_ARG(std::string, monitor) = "";
  /// "min" or "max".
  TORCH_ARG(std::string, mode) = "min";
  /// Keep the best k files; -1 keeps all, 0 none (only last.ckpt).
  TORCH_ARG(int64_t, save_top_k) = 1;
  /// Also write `last.ckpt` on every save and when training stops.
  TORCH_ARG(bool, save_last) = false;
  /// Save every n optimizer steps (0: off).
  TORCH_ARG(int64_t, every_n_train_steps) = 0;
  /// Save at the end of every n-th training epoch (0: off). Unset: 1 unless
  /// every_n_train_steps or train_time_interval is set.
  TORCH_ARG(std::optional<int64_t>, every_n_epochs) = std::nullopt;
  /// Save when this many seconds of training have passed since the last
  /// save (0: off).
  TORCH_ARG(double, train_time_interval) = 0.0;
  /// Write the model's weights only (no optimizer, loops, RNG): smaller, not resumable.
  TORCH_ARG(bool, save_weights_only) = false;
};

/// Saves checkpoints during fit: at epoch ends, every n steps or every so
/// many seconds, keeps the best `save_top_k` by a monitored metric, and
/// optionally `last.ckpt`. Decisions use rank 0's metric value, broadcast
/// through the Strategy, so every process decides the same; rank 0 writes.
/// Its table of best files is callback state, saved in the checkpoints.
class ModelCheckpoint : public Callback {
 public:
  explicit ModelCheckpoint(ModelCheckpointOptions options = {});
  /// From `trainer.callbacks[i].init_args` (Lightning's option names).
  static std::shared_ptr<Callback> from_config(cli::ConfigSection& section);

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

  /// The folder files go to (resolved at setup when not given).
  const std::filesystem::path& dirpath() const { return dirpath_; }
  const std::string& best_model_path() const { return best_model_path_; }
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
