#include <fulgur/callbacks/stochastic_weight_averaging.hpp>

#include <fulgur/modules/scoped_metric_sink.hpp>

#include <fulgur/modules/lightning_module.hpp>
#include <fulgur/trainer/result_collection.hpp>
#include <fulgur/trainer/trainer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <vector>

namespace fulgur {
namespace {

// Resets a BatchNorm of type Norm for a cumulative mean; `restore` puts its momentum back.
template <class Norm>
void reset_batch_norm(const std::shared_ptr<torch::nn::Module>& module, std::vector<std::function<void()>>& restore) {
  const auto norm = std::dynamic_pointer_cast<Norm>(module);
  if (!norm || !norm->options.track_running_stats()) return;
  const std::optional<double> momentum = norm->options.momentum();
  norm->reset_running_stats();
  norm->options.momentum(std::nullopt);
  restore.push_back([norm, momentum] { norm->options.momentum(momentum); });
}

}  // namespace

StochasticWeightAveraging::StochasticWeightAveraging(StochasticWeightAveragingOptions options)
    : WeightAveraging((options.validate(), /*use_buffers=*/false), /*validate_with_average=*/false),
      options_(std::move(options)) {
  if (options_.swa_lrs().empty()) {
    throw std::invalid_argument("[StochasticWeightAveraging] swa_lrs must be given (one value, or one per group)");
  }
  for (const double lr : options_.swa_lrs()) {
    if (!(lr > 0)) throw std::invalid_argument(fmt::format("[StochasticWeightAveraging] swa_lrs must be > 0, got {}", lr));
  }
  const double start = options_.swa_epoch_start();
  if (start >= 1 && start != std::floor(start)) {
    throw std::invalid_argument(fmt::format(
        "[StochasticWeightAveraging] swa_epoch_start must be an integer >= 1 or a fraction in (0, 1), got {}", start));
  }
}

bool StochasticWeightAveraging::should_update(std::optional<int64_t>, std::optional<int64_t> epoch_idx) const {
  return epoch_idx && *epoch_idx >= swa_start_;
}

void StochasticWeightAveraging::on_fit_start(Trainer& trainer, LightningModule& module) {
  WeightAveraging::on_fit_start(trainer, module);
  const double start = options_.swa_epoch_start();
  if (start >= 1) {
    swa_start_ = static_cast<int64_t>(start) - 1;
  } else {
    const auto max_epochs = trainer.config().options.max_epochs();
    if (!max_epochs || *max_epochs < 1) {
      throw std::invalid_argument(fmt::format(
          "[StochasticWeightAveraging] swa_epoch_start {} is a fraction of max_epochs, which is not set", start));
    }
    swa_start_ = std::max<int64_t>(static_cast<int64_t>(static_cast<double>(*max_epochs) * start) - 1, 0);
  }
  initial_lrs_.clear();
  if (trainer.optimizers().size() != 1) {
    throw std::invalid_argument(fmt::format("[StochasticWeightAveraging] works with one optimizer; the module has {}",
                                            trainer.optimizers().size()));
  }
  const size_t groups = trainer.optimizers().front().optimizer->param_groups().size();
  if (options_.swa_lrs().size() != 1 && options_.swa_lrs().size() != groups) {
    throw std::invalid_argument(fmt::format("[StochasticWeightAveraging] {} swa_lrs for {} parameter groups",
                                            options_.swa_lrs().size(), groups));
  }
}

double StochasticWeightAveraging::learning_rate(size_t group, int64_t epoch) const {
  const double swa_lr = options_.swa_lrs()[options_.swa_lrs().size() == 1 ? 0 : group];
  const double t = std::clamp(static_cast<double>(epoch - swa_start_) /
                                  static_cast<double>(std::max<int64_t>(1, options_.annealing_epochs())),
                              0.0, 1.0);
  const double alpha = options_.annealing_epochs() == 0 ? 1.0
                       : options_.annealing_strategy() == AnnealingStrategy::Cos ? (1.0 - std::cos(M_PI * t)) / 2.0
                                                                : t;
  return swa_lr * alpha + initial_lrs_.at(group) * (1.0 - alpha);
}

void StochasticWeightAveraging::on_train_epoch_start(Trainer& trainer, LightningModule&) {
  if (trainer.state().current_epoch() < swa_start_) return;
  auto& groups = trainer.optimizers().front().optimizer->param_groups();
  if (initial_lrs_.empty()) {
    for (auto& group : groups) initial_lrs_.push_back(group.options().get_lr());
  }
  // SWA's schedule replaces the module's from here on (a restored run sets it aside again).
  if (trainer.optimizers().front().lr_scheduler) {
    trainer.optimizers().front().lr_scheduler.reset();
    if (trainer.is_global_zero()) {
      std::cout << "fulgur: StochasticWeightAveraging: the LR scheduler is replaced from epoch " << swa_start_
                << std::endl;
    }
  }
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(learning_rate(i, trainer.state().current_epoch()));
}

void StochasticWeightAveraging::on_train_end(Trainer& trainer, LightningModule& module) {
  WeightAveraging::on_train_end(trainer, module);
  if (n_averaged() > 0 && update_batch_norm(trainer, module) && trainer.is_global_zero()) {
    std::cout << "fulgur: StochasticWeightAveraging: BatchNorm statistics recomputed for the averaged weights"
              << std::endl;
  }
}

bool StochasticWeightAveraging::update_batch_norm(Trainer& trainer, LightningModule& module) {
  DataLoader* loader = trainer.train_dataloader();
  if (loader == nullptr) return false;
  std::vector<std::function<void()>> restore;
  for (const auto& child : module.modules(/*include_self=*/false)) {
    reset_batch_norm<torch::nn::BatchNorm1dImpl>(child, restore);
    reset_batch_norm<torch::nn::BatchNorm2dImpl>(child, restore);
    reset_batch_norm<torch::nn::BatchNorm3dImpl>(child, restore);
  }
  if (restore.empty()) return false;
  const bool was_training = module.is_training();
  // What training_step logs during the pass goes nowhere.
  ResultCollection discarded(RunningStage::Train);
  const ScopedMetricSink sink(module, &discarded);
  auto finish = [&] {
    for (const auto& put_back : restore) put_back();
    module.train(was_training);
  };
  try {
    module.train();
    torch::NoGradGuard no_grad;
    auto batches = loader->iterate();
    for (int64_t i = 0; i < trainer.state().num_training_batches(); ++i) {
      const std::optional<Batch> batch = batches->next();
      if (!batch) break;
      module.training_step(trainer.strategy().batch_to_device(*batch), i);
    }
  } catch (...) {
    finish();
    throw;
  }
  finish();
  return true;
}

CallbackState StochasticWeightAveraging::state_dict() const {
  CallbackState state = WeightAveraging::state_dict();
  state["initial_lrs"] = torch::tensor(std::vector<double>(initial_lrs_), torch::kDouble);
  return state;
}

void StochasticWeightAveraging::load_state_dict(const CallbackState& state) {
  WeightAveraging::load_state_dict(state);
  const auto found = state.find("initial_lrs");
  if (found == state.end() || !found->second.isTensor()) {
    throw std::runtime_error("[StochasticWeightAveraging::load_state_dict] the state has no 'initial_lrs'");
  }
  const torch::Tensor lrs = found->second.toTensor().to(torch::kDouble).contiguous();
  initial_lrs_.assign(lrs.data_ptr<double>(), lrs.data_ptr<double>() + lrs.numel());
}

}  // namespace fulgur
