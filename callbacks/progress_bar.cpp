#include <fulgur/callbacks/progress_bar.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <unistd.h>

namespace fulgur {
namespace {

std::string format_metrics(const std::map<std::string, double>& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) text += fmt::format(" {}={:.4g}", name, value);
  return text;
}

}  // namespace

ProgressBar::ProgressBar(std::FILE* out, double line_interval_s)
    : out_(out), interactive_(::isatty(::fileno(out)) != 0), line_interval_s_(line_interval_s) {}

void ProgressBar::on_train_epoch_start(Trainer&, LightningModule&) {
  epoch_start_ = last_line_ = std::chrono::steady_clock::now();
}

void ProgressBar::print(Trainer& trainer, int64_t batch, int64_t total, bool final_line) {
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - epoch_start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(batch) / elapsed : 0.0;
  const int64_t max_epochs = trainer.config().max_epochs;
  const std::string line =
      fmt::format("Epoch {}{}: {}/{} [{:.1f}s, {:.2f} it/s]{}", trainer.current_epoch(),
                  max_epochs == -1 ? "" : fmt::format("/{}", max_epochs - 1), batch, total, elapsed, rate,
                  format_metrics(trainer.progress_bar_metrics()));
  if (interactive_) {
    fmt::print(out_, "\r{}\x1b[K{}", line, final_line ? "\n" : "");
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  last_line_ = now;
}

void ProgressBar::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&,
                                     int64_t batch_idx) {
  if (!trainer.is_global_zero()) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_line_).count();
  // Redraw a terminal a few times per second; write a log line rarely.
  if (since >= (interactive_ ? 0.1 : line_interval_s_)) {
    print(trainer, batch_idx + 1, trainer.num_training_batches(), false);
  }
}

void ProgressBar::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  if (!trainer.is_global_zero()) return;
  print(trainer, trainer.num_training_batches(), trainer.num_training_batches(), true);
}

}  // namespace fulgur
