#pragma once

#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/gradient_reducer.hpp>

#include <memory>

namespace fulgur {

struct DDPStrategyOptions {
  /// Process group, ranks, buffer broadcast and timeline.
  DataParallelOptions data_parallel;
  GradientReducer::Options reducer;
};

/// Distributed data parallel as torch's DDP: each process holds a full copy
/// of the model; gradients are averaged by bucketed allreduce overlapping
/// backward (GradientReducer).
class DDPStrategy : public DataParallelStrategy {
 public:
  DDPStrategy(Accelerator accelerator, PrecisionMode precision, DDPStrategyOptions options);

  std::string name() const override { return "ddp"; }

  /// The gradient path; null before setup and under manual optimization.
  const GradientReducer* reducer() const { return dynamic_cast<const GradientReducer*>(synchronizer()); }

 protected:
  std::unique_ptr<GradientSynchronizer> make_synchronizer(std::vector<torch::Tensor> parameters,
                                                          std::vector<std::string> names) override;

 private:
  GradientReducer::Options reducer_options_;
};

}  // namespace fulgur
