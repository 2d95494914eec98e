#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/loops/progress.hpp>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace fulgur {

class RunContext;

/// predict_step over each loader in turn, without gradients, in eval mode;
/// collects the outputs in loader and batch order.
class PredictLoop {
 public:
  explicit PredictLoop(RunContext& context) : context_(context) {}

  /// At most `max_batches[i]` batches of loader i.
  std::vector<torch::Tensor> run(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                 const std::vector<int64_t>& max_batches);
  const Progress& batch_progress() const { return batch_progress_; }

 private:
  RunContext& context_;
  Progress batch_progress_;
};

}  // namespace fulgur
