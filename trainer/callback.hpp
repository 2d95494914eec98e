#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/step_output.hpp>

#include <torch/torch.h>

#include <exception>
#include <map>
#include <string>
#include <vector>

namespace fulgur {

class LightningModule;
class Trainer;

/// State a callback carries across a checkpoint, as flat key -> value.
using CallbackState = std::map<std::string, torch::IValue>;

/// Code that runs at fixed points of the Trainer's loops without being part
/// of the model: logging, checkpointing, early stopping, progress display.
/// Every hook is a no-op by default; the Trainer calls callbacks in the order
/// given, before the LightningModule's hook of the same name.
class Callback {
 public:
  virtual ~Callback() = default;

  /// Identifies this callback's entry in a checkpoint; unique per instance.
  virtual std::string state_key() const = 0;
  virtual CallbackState state_dict() const { return {}; }
  virtual void load_state_dict(const CallbackState&) {}
  /// True for callbacks that decide on a monitored metric (EarlyStopping,
  /// ModelCheckpoint): their on_train_epoch_end runs after the module's and
  /// after the epoch's metrics are reported.
  virtual bool monitors_metrics() const { return false; }

  virtual void setup(Trainer&, LightningModule&) {}
  virtual void teardown(Trainer&, LightningModule&) {}

  virtual void on_fit_start(Trainer&, LightningModule&) {}
  virtual void on_fit_end(Trainer&, LightningModule&) {}
  virtual void on_sanity_check_start(Trainer&, LightningModule&) {}
  virtual void on_sanity_check_end(Trainer&, LightningModule&) {}
  virtual void on_train_start(Trainer&, LightningModule&) {}
  virtual void on_train_end(Trainer&, LightningModule&) {}
  virtual void on_validation_start(Trainer&, LightningModule&) {}
  virtual void on_validation_end(Trainer&, LightningModule&) {}
  virtual void on_test_start(Trainer&, LightningModule&) {}
  virtual void on_test_end(Trainer&, LightningModule&) {}
  virtual void on_predict_start(Trainer&, LightningModule&) {}
  virtual void on_predict_end(Trainer&, LightningModule&) {}
  /// After each predict_step, with what it returned.
  virtual void on_predict_batch_end(Trainer&, LightningModule&, const torch::Tensor& /*prediction*/,
                                    const Batch&, int64_t /*batch_idx*/) {}
  /// After the last predict batch, with every prediction of this process, in order.
  virtual void on_predict_epoch_end(Trainer&, LightningModule&, const std::vector<torch::Tensor>& /*predictions*/) {}

  virtual void on_train_epoch_start(Trainer&, LightningModule&) {}
  virtual void on_train_epoch_end(Trainer&, LightningModule&) {}
  virtual void on_validation_epoch_start(Trainer&, LightningModule&) {}
  virtual void on_validation_epoch_end(Trainer&, LightningModule&) {}
  virtual void on_test_epoch_start(Trainer&, LightningModule&) {}
  virtual void on_test_epoch_end(Trainer&, LightningModule&) {}

  virtual void on_train_batch_start(Trainer&, LightningModule&, const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_train_batch_end(Trainer&, LightningModule&, const torch::Tensor& /*loss*/, const Batch&,
                                  int64_t /*batch_idx*/) {}
  virtual void on_validation_batch_start(Trainer&, LightningModule&, const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_validation_batch_end(Trainer&, LightningModule&, const Batch&, int64_t /*batch_idx*/) {}
  /// With what validation_step returned (Lightning's `outputs`) and the
  /// batch's loader index; by default the overload without them.
  virtual void on_validation_batch_end(Trainer& trainer, LightningModule& module, const StepOutput& /*outputs*/,
                                       const Batch& batch, int64_t batch_idx, int64_t /*dataloader_idx*/) {
    on_validation_batch_end(trainer, module, batch, batch_idx);
  }
  virtual void on_test_batch_start(Trainer&, LightningModule&, const Batch&, int64_t /*batch_idx*/) {}
  virtual void on_test_batch_end(Trainer&, LightningModule&, const Batch&, int64_t /*batch_idx*/) {}
  /// With what test_step returned and the batch's loader index; by default the overload without them.
  virtual void on_test_batch_end(Trainer& trainer, LightningModule& module, const StepOutput& /*outputs*/,
                                 const Batch& batch, int64_t batch_idx, int64_t /*dataloader_idx*/) {
    on_test_batch_end(trainer, module, batch, batch_idx);
  }

  virtual void on_before_backward(Trainer&, LightningModule&, const torch::Tensor& /*loss*/) {}
  virtual void on_after_backward(Trainer&, LightningModule&) {}
  virtual void on_before_optimizer_step(Trainer&, LightningModule&, torch::optim::Optimizer&) {}

  /// Called once when a run fails, before teardown and before the error
  /// propagates to the caller.
  virtual void on_exception(Trainer&, LightningModule&, const std::exception_ptr&) {}
};

}  // namespace fulgur
