#pragma once

#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/collectives/gradient_reducer.hpp>

#include <memory>

namespace fulgur {

/// Distributed data parallel as torch's DDP: each process holds a full copy
/// of the model; gradients are averaged by bucketed allreduce overlapping
/// backward (GradientReducer).
class DDPStrategy : public DataParallelStrategy {
 public:
  /// `data_parallel`: process group, ranks and timeline;
  /// `options`: the ddp section (buffer broadcast, gradient buckets, unused parameters).
  DDPStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel, DDPOptions options);

  std::string name() const override { return on_mesh() ? "model_parallel" : "ddp"; }

  /// The gradient path; null before setup and under manual optimization.
  const GradientReducer* reducer() const { return dynamic_cast<const GradientReducer*>(synchronizer()); }

 protected:
  std::unique_ptr<GradientSynchronizer> make_synchronizer(std::vector<torch::Tensor> parameters,
                                                          std::vector<std::string> names) override;
};

}  // namespace fulgur
