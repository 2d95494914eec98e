#pragma once

#include <fulgur/callbacks/weight_averaging.hpp>
#include <fulgur/core/option_enum.hpp>
#include <fulgur/core/options.hpp>

#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// The shape of SWA's move of the learning rate to swa_lrs.
enum class AnnealingStrategy { Cos, Linear };
inline std::vector<std::string> option_choices(AnnealingStrategy) { return {"cos", "linear"}; }

/// Options of StochasticWeightAveraging, with Lightning's names and defaults.
#define FULGUR_STOCHASTIC_WEIGHT_AVERAGING_OPTIONS(X)                                                          \
  X(std::vector<double>, swa_lrs, {}, "SWA learning rate: one for every parameter group, or one per group",   \
    fulgur::check::Any{})                                                                                      \
  X(double, swa_epoch_start, 0.8,                                                                              \
    "first SWA epoch: an integer >= 1 counts epochs (1 = the first); a fraction in (0, 1) of max_epochs",      \
    fulgur::check::Positive{})                                                                                 \
  X(int64_t, annealing_epochs, 10, "epochs over which the learning rate moves to swa_lrs",                     \
    fulgur::check::AtLeast{0})                                                                                 \
  X(fulgur::AnnealingStrategy, annealing_strategy, fulgur::AnnealingStrategy::Cos,                           \
    "cos or linear: the shape of that move", fulgur::check::Any{})

struct StochasticWeightAveragingOptions {
  StochasticWeightAveragingOptions() = default;
  explicit StochasticWeightAveragingOptions(double swa_lr) : swa_lrs_({swa_lr}) {}
  FULGUR_OPTIONS(StochasticWeightAveragingOptions, FULGUR_STOCHASTIC_WEIGHT_AVERAGING_OPTIONS)
};

/// Stochastic Weight Averaging (Lightning's StochasticWeightAveraging, after
/// Izmailov et al. 2018): from the SWA epoch on, the module's LR scheduler is
/// set aside and every parameter group's learning rate moves from its value
/// then to swa_lrs over annealing_epochs epochs (cosine or linear, as
/// torch.optim.swa_utils.SWALR), and the weights are folded into an
/// equal-weight average after every epoch (the parameters; buffers are not
/// averaged). When training ends the average becomes the module's weights
/// and, as in Lightning (torch.optim.swa_utils.update_bn), BatchNorm's
/// running statistics are recomputed for them: reset, then a cumulative
/// mean (momentum None) over one pass of the training loader in train mode
/// without gradients, each BatchNorm's momentum restored afterwards.
///
///   auto swa = std::make_shared<StochasticWeightAveraging>(StochasticWeightAveragingOptions(0.01));
class StochasticWeightAveraging : public WeightAveraging {
 public:
  using Options = StochasticWeightAveragingOptions;
  explicit StochasticWeightAveraging(StochasticWeightAveragingOptions options);

  std::string state_key() const override { return "StochasticWeightAveraging"; }
  bool should_update(std::optional<int64_t> step_idx, std::optional<int64_t> epoch_idx) const override;
  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;

  void on_fit_start(Trainer& trainer, LightningModule& module) override;
  void on_train_epoch_start(Trainer& trainer, LightningModule& module) override;
  void on_train_end(Trainer& trainer, LightningModule& module) override;

  /// The first SWA epoch (from 0), known once fit has started.
  int64_t swa_start() const { return swa_start_; }
  /// The learning rate of parameter group `group` in epoch `epoch` (>= swa_start).
  double learning_rate(size_t group, int64_t epoch) const;
  const StochasticWeightAveragingOptions& options() const { return options_; }

 private:
  /// The BatchNorm pass over the training data; false when the module has no
  /// BatchNorm that tracks running statistics.
  bool update_batch_norm(Trainer& trainer, LightningModule& module);

  StochasticWeightAveragingOptions options_;
  int64_t swa_start_ = 0;
  std::vector<double> initial_lrs_;  // each group's learning rate when SWA started; empty before
};

}  // namespace fulgur
