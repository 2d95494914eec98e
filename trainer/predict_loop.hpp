#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/progress.hpp>

#include <torch/torch.h>

#include <vector>

namespace fulgur {

class Trainer;

/// predict_step over a loader, without gradients, in eval mode; collects
/// the outputs in batch order.
class PredictLoop {
 public:
  explicit PredictLoop(Trainer& trainer) : trainer_(trainer) {}

  std::vector<torch::Tensor> run(DataLoader& loader, int64_t max_batches);
  const Progress& batch_progress() const { return batch_progress_; }

 private:
  Trainer& trainer_;
  Progress batch_progress_;
};

}  // namespace fulgur
