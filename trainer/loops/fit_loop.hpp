#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/loops/progress.hpp>
#include <fulgur/trainer/loops/training_epoch_loop.hpp>

#include <string>

namespace fulgur {

class RunContext;

/// Repeats training epochs until max_epochs or max_steps is reached, or a
/// stop request is honoured (never before min_epochs).
class FitLoop {
 public:
  explicit FitLoop(RunContext& context);

  /// Trains over `train`; validates over the `val` loaders (none: no validation).
  void run(DataLoader& train, const std::vector<std::shared_ptr<DataLoader>>& val);

  /// Epochs completed so far; while an epoch runs, its index.
  int64_t current_epoch() const;
  bool done() const;
  TrainingEpochLoop& epoch_loop() { return epoch_loop_; }

  /// Where training stands, for checkpoints: `epoch` (the one to run or
  /// continue), `batch_in_epoch` (batches of it already done) and the epoch
  /// loop's counters.
  c10::impl::GenericDict state_dict() const;
  /// Restores a state_dict(); the next run() continues from there.
  void load_state_dict(const c10::impl::GenericDict& state);

 private:
  /// Which limit has been reached: "max_steps=N", "max_epochs=N", or empty.
  std::string limit_reached() const;

  RunContext& context_;
  TrainingEpochLoop epoch_loop_;
};

}  // namespace fulgur
