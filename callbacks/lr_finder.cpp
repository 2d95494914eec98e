#include <fulgur/callbacks/lr_finder.hpp>

#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace fulgur {

LRFinder::LRFinder(LRFinderOptions options) : options_(std::move(options)) {
  options_.validate();
  if (options_.max_lr() <= options_.min_lr()) {
    throw std::invalid_argument(fmt::format("[LRFinder] max_lr ({}) must be > min_lr ({})", options_.max_lr(),
                                            options_.min_lr()));
  }
}

double LRFinder::learning_rate(int64_t step) const {
  const double r = static_cast<double>(step) / static_cast<double>(options_.num_training_steps());
  if (options_.mode() == LRFinderMode::Linear) return options_.min_lr() + r * (options_.max_lr() - options_.min_lr());
  return options_.min_lr() * std::pow(options_.max_lr() / options_.min_lr(), r);
}

void LRFinder::on_train_batch_start(Trainer& trainer, LightningModule&, const Batch&, int64_t) {
  const double lr = learning_rate(trainer.state().global_step());
  if (trainer.optimizers().size() != 1) {
    throw std::invalid_argument(
        fmt::format("[LRFinder] works with one optimizer; the module has {}", trainer.optimizers().size()));
  }
  for (auto& group : trainer.optimizers().front().optimizer->param_groups()) group.options().set_lr(lr);
}

void LRFinder::on_train_batch_end(Trainer& trainer, LightningModule&, const torch::Tensor& loss, const Batch&,
                                  int64_t) {
  // One point per optimizer step (batches that accumulate gradients add none).
  if (trainer.state().global_step() <= recorded_step_) return;
  recorded_step_ = trainer.state().global_step();
  const int64_t step = static_cast<int64_t>(losses_.size());
  constexpr double beta = 0.98;
  const double value = loss.detach().item<double>();
  average_loss_ = beta * average_loss_ + (1 - beta) * value;
  const double smoothed = average_loss_ / (1 - std::pow(beta, static_cast<double>(step + 1)));
  lrs_.push_back(learning_rate(trainer.state().global_step() - 1));
  losses_.push_back(smoothed);
  const auto threshold = options_.early_stop_threshold();
  if (threshold && step > 1 && (!std::isfinite(smoothed) || smoothed > *threshold * best_loss_)) {
    trainer.request_stop();
    return;
  }
  if (step == 0 || smoothed < best_loss_) best_loss_ = smoothed;
}

std::optional<double> LRFinder::suggestion(int64_t skip_begin, int64_t skip_end) const {
  std::vector<double> lrs, losses;
  const int64_t end = static_cast<int64_t>(losses_.size()) - skip_end;
  for (int64_t i = skip_begin; i < end; ++i) {
    if (!std::isfinite(losses_[i])) continue;
    lrs.push_back(lrs_[i]);
    losses.push_back(losses_[i]);
  }
  if (losses.size() < 2) return std::nullopt;
  // np.gradient with unit spacing: one-sided at the ends, central inside.
  const size_t n = losses.size();
  size_t steepest = 0;
  double steepest_gradient = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < n; ++i) {
    const double gradient = i == 0       ? losses[1] - losses[0]
                            : i == n - 1 ? losses[n - 1] - losses[n - 2]
                                         : (losses[i + 1] - losses[i - 1]) / 2;
    if (gradient < steepest_gradient) {
      steepest_gradient = gradient;
      steepest = i;
    }
  }
  return lrs[steepest];
}

void LRFinder::write_csv(const std::filesystem::path& path) const {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path);
  out << "lr,loss\n";
  for (size_t i = 0; i < lrs_.size(); ++i) out << fmt::format("{},{}\n", lrs_[i], losses_[i]);
  if (!out) throw std::runtime_error(fmt::format("[LRFinder] cannot write {}", path.string()));
}

}  // namespace fulgur
