#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/progress.hpp>
#include <fulgur/trainer/training_epoch_loop.hpp>

namespace fulgur {

class Trainer;

/// Repeats training epochs until max_epochs or max_steps is reached, or a
/// stop request is honoured (never before min_epochs).
class FitLoop {
 public:
  explicit FitLoop(Trainer& trainer);

  /// Trains over `train`; validates over `val` when not null.
  void run(DataLoader& train, DataLoader* val);

  /// Epochs completed so far; while an epoch runs, its index.
  int64_t current_epoch() const { return epoch_progress_.total; }
  bool done() const;
  TrainingEpochLoop& epoch_loop() { return epoch_loop_; }
  const Progress& epoch_progress() const { return epoch_progress_; }

 private:
  Trainer& trainer_;
  Progress epoch_progress_;
  TrainingEpochLoop epoch_loop_;
};

}  // namespace fulgur
