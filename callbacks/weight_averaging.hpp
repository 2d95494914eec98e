#pragma once

#include <fulgur/trainer/callback.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fulgur {

/// Keeps an average of the module's weights beside them (Lightning's
/// WeightAveraging): after the optimizer steps or epochs should_update()
/// picks, the weights are folded into the average by average(). Validation
/// runs with the averaged weights (swapped in for the validation epoch and
/// back after it); when training ends the average becomes the module's
/// weights, so what is tested, predicted or saved afterwards is the average.
/// The average and its counters are part of checkpoints (the module's own
/// weights in a checkpoint stay the ones being trained), so a resumed run
/// ends with the same average as an uninterrupted one.
class WeightAveraging : public Callback {
 public:
  /// `use_buffers`: average the floating-point buffers (BatchNorm's running
  /// statistics) too; integer buffers are copied. `validate_with_average`:
  /// swap the average in for validation (StochasticWeightAveraging does not,
  /// as in Lightning).
  explicit WeightAveraging(bool use_buffers = true, bool validate_with_average = true)
      : use_buffers_(use_buffers), validate_with_average_(validate_with_average) {}

  /// Whether to update the average after optimizer step `step_idx` (from 0)
  /// or after training epoch `epoch_idx` (from 0); one of them is given.
  virtual bool should_update(std::optional<int64_t> step_idx, std::optional<int64_t> epoch_idx) const = 0;
  /// Folds `current` into `averaged`, which holds `n_averaged` (>= 1) values.
  /// Default: the equal-weight mean.
  virtual void average(torch::Tensor& averaged, const torch::Tensor& current, int64_t n_averaged) const;

  CallbackState state_dict() const override;
  void load_state_dict(const CallbackState& state) override;

  void on_fit_start(Trainer& trainer, LightningModule& module) override;
  void on_train_batch_end(Trainer& trainer, LightningModule& module, const torch::Tensor& loss, const Batch& batch,
                          int64_t batch_idx) override;
  void on_train_epoch_end(Trainer& trainer, LightningModule& module) override;
  void on_train_end(Trainer& trainer, LightningModule& module) override;
  void on_validation_epoch_start(Trainer& trainer, LightningModule& module) override;
  void on_validation_epoch_end(Trainer& trainer, LightningModule& module) override;

  /// The averaged tensors by the module's dotted names; empty before fit.
  const std::map<std::string, torch::Tensor>& averaged() const { return averaged_; }
  /// How many times the weights were folded in.
  int64_t n_averaged() const { return n_averaged_; }

 protected:
  /// Folds the module's weights into the average now.
  void update(LightningModule& module);
  /// Copies the average into the module's weights.
  void copy_average_to(LightningModule& module);

 private:
  std::map<std::string, torch::Tensor> weights_of(LightningModule& module) const;
  void swap(LightningModule& module);

  bool use_buffers_;
  bool validate_with_average_;
  std::map<std::string, torch::Tensor> averaged_;
  int64_t n_averaged_ = 0;
  int64_t latest_update_step_ = 0;    // global_step at the last step update
  int64_t latest_update_epoch_ = -1;  // epoch of the last epoch update
  bool swapped_ = false;
};

}  // namespace fulgur
