#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/loops/loop_context.hpp>
#include <fulgur/trainer/loops/progress.hpp>

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace fulgur {

class Trainer;

/// predict_step over each loader in turn, without gradients, in eval mode;
/// collects the outputs in loader and batch order.
class PredictLoop {
 public:
  PredictLoop(Trainer& trainer, const LoopContext& context) : trainer_(trainer), hooks_(context.hooks) {}

  /// At most `max_batches[i]` batches of loader i.
  std::vector<torch::Tensor> run(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                 const std::vector<int64_t>& max_batches);
  const Progress& batch_progress() const { return batch_progress_; }

 private:
  Trainer& trainer_;
  HookDispatcher& hooks_;
  Progress batch_progress_;
};

}  // namespace fulgur
