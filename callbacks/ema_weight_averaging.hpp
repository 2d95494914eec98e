#pragma once

#include <fulgur/callbacks/weight_averaging.hpp>
#include <fulgur/core/options.hpp>

#include <optional>
#include <string>

namespace fulgur {

/// Options of EMAWeightAveraging, with Lightning's names and defaults.
#define FULGUR_EMA_WEIGHT_AVERAGING_OPTIONS(X)                                                              \
  X(double, decay, 0.999, "weight of the average at each update: average = decay * average + (1 - decay) " \
    "* weights", (fulgur::check::Between{0.0, 1.0}))                                                        \
  X(int64_t, update_every_n_steps, 1, "update after every n-th optimizer step (0: never after steps)",      \
    fulgur::check::AtLeast{0})                                                                              \
  X(std::optional<int64_t>, update_starting_at_step, std::nullopt,                                          \
    "first optimizer step (from 0) to update after; null: from the first", fulgur::check::AtLeast{0})       \
  X(std::optional<int64_t>, update_starting_at_epoch, std::nullopt,                                         \
    "also update after every epoch from this one (from 0); null: not after epochs", fulgur::check::AtLeast{0}) \
  X(bool, use_buffers, true, "average BatchNorm's running statistics too (integer buffers are copied)",     \
    fulgur::check::Any{})

struct EMAWeightAveragingOptions {
  FULGUR_OPTIONS(EMAWeightAveragingOptions, FULGUR_EMA_WEIGHT_AVERAGING_OPTIONS)
};

/// An exponential moving average of the weights (Lightning's
/// EMAWeightAveraging), updated after optimizer steps; validation runs with
/// the average and the module ends training with it (see WeightAveraging).
///
///   auto ema = std::make_shared<EMAWeightAveraging>(EMAWeightAveragingOptions().decay(0.99));
class EMAWeightAveraging : public WeightAveraging {
 public:
  using Options = EMAWeightAveragingOptions;
  explicit EMAWeightAveraging(EMAWeightAveragingOptions options = {});

  std::string state_key() const override { return "EMAWeightAveraging"; }
  bool should_update(std::optional<int64_t> step_idx, std::optional<int64_t> epoch_idx) const override;
  void average(torch::Tensor& averaged, const torch::Tensor& current, int64_t n_averaged) const override;

  const EMAWeightAveragingOptions& options() const { return options_; }

 private:
  EMAWeightAveragingOptions options_;
};

}  // namespace fulgur
