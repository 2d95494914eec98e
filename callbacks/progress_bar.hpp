#pragma once

#include <fulgur/core/options.hpp>
#include <fulgur/trainer/callback.hpp>

#include <chrono>
#include <cstdio>
#include <optional>

namespace fulgur {

/// Options of ProgressBar.
#define FULGUR_PROGRESS_BAR_OPTIONS(X)                                                                        \
  X(int64_t, refresh_rate, 1, "on a terminal: redraw every this many batches (at most 10 times a second)",    \
    fulgur::check::AtLeast{1})                                                                                \
  X(int64_t, line_every_n_steps, 50,                                                                          \
    "not on a terminal (a log file, a SLURM output): one line every this many training batches, plus one at " \
    "each epoch's end",                                                                                       \
    fulgur::check::AtLeast{1})                                                                                \
  X(std::optional<bool>, interactive, std::nullopt,                                                           \
    "redraw in place (true) or print lines (false); null: ask isatty", fulgur::check::Any{})

struct ProgressBarOptions {
  FULGUR_OPTIONS(ProgressBarOptions, FULGUR_PROGRESS_BAR_OPTIONS)
};

/// Training and validation progress, printed by global rank 0 only. On a
/// terminal one line is redrawn in place with a bar, it/s, elapsed time,
/// ETA and the `prog_bar` metrics; otherwise it prints plain lines every
/// `line_every_n_steps` batches so logs stay readable.
///
///   Epoch 1/9:  45%|#########           | 45/100 [00:03<00:04, 12.34 it/s] train_loss=0.1234
class ProgressBar : public Callback {
 public:
  using Options = ProgressBarOptions;
  explicit ProgressBar(ProgressBarOptions options = {}, std::FILE* out = stdout);

  std::string state_key() const override { return "ProgressBar"; }
  bool interactive() const { return interactive_; }

  void on_train_epoch_start(Trainer&, LightningModule&) override;
  void on_train_batch_end(Trainer&, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override;
  void on_train_epoch_end(Trainer&, LightningModule&) override;
  void on_validation_start(Trainer&, LightningModule&) override;
  void on_validation_batch_end(Trainer&, LightningModule&, const Batch&, int64_t) override;
  void on_validation_end(Trainer&, LightningModule&) override;

 private:
  using Clock = std::chrono::steady_clock;
  /// Writes the line for `done` of `total` batches; `final_line` ends it.
  void print(const std::string& title, int64_t done, int64_t total, Clock::time_point start,
             const std::string& metrics, bool final_line);

  ProgressBarOptions options_;
  std::FILE* out_;
  bool interactive_;
  Clock::time_point epoch_start_;
  Clock::time_point validation_start_;
  Clock::time_point last_draw_;
  int64_t batches_done_ = 0;  // in the running epoch
};

}  // namespace fulgur
