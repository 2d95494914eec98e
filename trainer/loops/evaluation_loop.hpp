#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/trainer/loops/progress.hpp>
#include <fulgur/trainer/result_collection.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fulgur {

class RunContext;

/// One pass of validation_step or test_step over a loader, without
/// gradients and with the module in eval mode; reduces what the steps logged
/// into epoch metrics. Used for validation inside fit, the sanity check,
/// validate() and test().
class EvaluationLoop {
 public:
  /// `stage` is RunningStage::Validate or RunningStage::Test.
  EvaluationLoop(RunContext& context, RunningStage stage);

  /// Runs at most `max_batches[i]` batches of each loader i, one loader
  /// after the other (with several, the steps get the loader's index and
  /// logged names its "/dataloader_idx_<i>"). A sanity check reports nothing
  /// to loggers or callback metrics. Returns the epoch metrics (callback form).
  std::map<std::string, double> run(const std::vector<std::shared_ptr<DataLoader>>& loaders,
                                    const std::vector<int64_t>& max_batches, bool sanity_check = false);

  const Progress& batch_progress() const { return batch_progress_; }
  /// Batches of the pass running now (or of the last one), all loaders together.
  int64_t num_batches() const { return num_batches_; }

 private:
  RunContext& context_;
  RunningStage stage_;
  ResultCollection results_;
  Progress batch_progress_;
  int64_t num_batches_ = 0;
};

}  // namespace fulgur
