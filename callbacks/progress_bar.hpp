#pragma once

#include <fulgur/callbacks/callback.hpp>

#include <chrono>
#include <cstdio>

namespace fulgur {

/// Training progress on global rank 0. On a terminal one line is redrawn in
/// place; otherwise (a log file, a SLURM output) it prints plain lines at
/// most every `line_interval_s` seconds plus one per finished epoch, so logs
/// stay readable.
class ProgressBar : public Callback {
 public:
  explicit ProgressBar(std::FILE* out = stdout, double line_interval_s = 30.0);

  std::string state_key() const override { return "ProgressBar"; }

  void on_train_epoch_start(Trainer&, LightningModule&) override;
  void on_train_batch_end(Trainer&, LightningModule&, const torch::Tensor&, const Batch&, int64_t) override;
  void on_train_epoch_end(Trainer&, LightningModule&) override;

 private:
  void print(Trainer& trainer, int64_t batch, int64_t total, bool final_line);

  std::FILE* out_;
  bool interactive_;
  double line_interval_s_;
  std::chrono::steady_clock::time_point epoch_start_;
  std::chrono::steady_clock::time_point last_line_;
};

}  // namespace fulgur
