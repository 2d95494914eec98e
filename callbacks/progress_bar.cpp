#include <fulgur/callbacks/progress_bar.hpp>

#include <fulgur/trainer/connectors/logger_connector.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <stdexcept>

#include <unistd.h>

namespace fulgur {
namespace {

constexpr int kBarWidth = 20;

std::string format_metrics(const std::map<std::string, double>& metrics) {
  std::string text;
  for (const auto& [name, value] : metrics) text += fmt::format(" {}={:.4g}", name, value);
  return text;
}

std::string clock_text(double seconds) {
  const auto s = static_cast<int64_t>(seconds);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60) : fmt::format("{:02}:{:02}", s / 60, s % 60);
}

}  // namespace

ProgressBar::ProgressBar(ProgressBarOptions options, std::FILE* out)
    : options_(std::move(options)),
      out_(out),
      interactive_(options_.interactive().value_or(::isatty(::fileno(out)) != 0)) {
  options_.validate();
}

void ProgressBar::print(const std::string& title, int64_t done, int64_t total, Clock::time_point start,
                        const std::string& metrics, bool final_line) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - start).count();
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0.0;
  const std::string eta = rate > 0 ? clock_text(static_cast<double>(total - done) / rate) : "?";
  std::string line;
  if (interactive_) {
    const double fraction = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
    const int filled = static_cast<int>(fraction * kBarWidth);
    line = fmt::format("{}: {:3.0f}%|{}{}| {}/{} [{}<{}, {:.2f} it/s]{}", title, fraction * 100, std::string(filled, '#'),
                       std::string(kBarWidth - filled, ' '), done, total, clock_text(elapsed), eta, rate, metrics);
    // \r back to the line's start, \x1b[K clears what a longer previous line left.
    fmt::print(out_, "\r{}\x1b[K{}", line, final_line ? "\n" : "");
  } else {
    line = fmt::format("{}: {}/{} [{}<{}, {:.2f} it/s]{}", title, done, total, clock_text(elapsed), eta, rate, metrics);
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
  last_draw_ = now;
}

void ProgressBar::on_train_epoch_start(Trainer&, LightningModule&) {
  epoch_start_ = Clock::now();
  last_draw_ = Clock::time_point{};
  batches_done_ = 0;
}

namespace {

std::string epoch_title(Trainer& trainer) {
  const int64_t max_epochs = trainer.config().max_epochs;
  return fmt::format("Epoch {}{}", trainer.state().current_epoch(), max_epochs == -1 ? "" : fmt::format("/{}", max_epochs - 1));
}

}  // namespace

void ProgressBar::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor&, const Batch&,
                                     int64_t batch_idx) {
  if (!trainer.is_global_zero()) return;
  const int64_t done = batch_idx + 1;
  const int64_t total = trainer.state().num_training_batches();
  batches_done_ = done;
  if (done == total) return;  // the epoch-end line shows it
  if (interactive_) {
    const double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
    if (done % options_.refresh_rate() != 0 || since < 0.1) return;
  } else if (done % options_.line_every_n_steps() != 0) {
    return;
  }
  print(epoch_title(trainer), done, total, epoch_start_,
        format_metrics(trainer.state().progress_bar_metrics()), false);
}

void ProgressBar::on_train_epoch_end(Trainer& trainer, LightningModule&) {
  if (!trainer.is_global_zero()) return;
  const int64_t total = trainer.state().num_training_batches();
  print(epoch_title(trainer), batches_done_, total, epoch_start_,
        format_metrics(trainer.state().progress_bar_metrics()), true);
}

void ProgressBar::on_validation_start(Trainer&, LightningModule&) { validation_start_ = Clock::now(); }

void ProgressBar::on_validation_batch_end(Trainer& trainer, LightningModule&, const Batch&, int64_t batch_idx) {
  // Validation progress only on a terminal: a log file gets the results in the epoch line.
  if (!interactive_ || !trainer.is_global_zero()) return;
  const double since = std::chrono::duration<double>(Clock::now() - last_draw_).count();
  if (since < 0.1) return;
  print(trainer.state().sanity_checking() ? "Sanity checking" : "Validation", batch_idx + 1,
        trainer.state().num_eval_batches(),
        validation_start_, "", false);
}

void ProgressBar::on_validation_end(Trainer& trainer, LightningModule&) {
  if (!interactive_ || !trainer.is_global_zero()) return;
  fmt::print(out_, "\r\x1b[K");  // the training line takes the place back
  std::fflush(out_);
}

}  // namespace fulgur
