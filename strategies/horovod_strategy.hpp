#pragma once

#include <fulgur/strategies/data_parallel_strategy.hpp>
#include <fulgur/strategies/collectives/horovod_controller.hpp>

#include <memory>

namespace fulgur {

/// Horovod's data parallelism done natively: parameters (and, once the
/// optimizer exists, its state) are broadcast from rank 0; gradients are
/// averaged by a HorovodController — tensor fusion, ring allreduce over
/// point-to-point send/recv, optional float16 compression, stall
/// inspection — on a background thread with its own process group, while
/// metrics, broadcasts and barriers use the main group as in DDP. Scaling
/// the learning rate by the world size is left to the user.
class HorovodStrategy : public DataParallelStrategy {
 public:
  /// `data_parallel`: process group, ranks and timeline; `options`: the
  /// horovod section; `ddp`: the buffer broadcast and the unused-parameter
  /// switch, which horovod shares.
  HorovodStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions data_parallel,
                  HorovodOptions options, DDPOptions ddp);
  ~HorovodStrategy() override;

  std::string name() const override { return "horovod"; }

  void setup_environment() override;
  void setup_optimizers(torch::optim::Optimizer& optimizer) override;

  /// The gradient path; null before setup and under manual optimization.
  const HorovodController* controller() const { return dynamic_cast<const HorovodController*>(synchronizer()); }

 protected:
  std::unique_ptr<GradientSynchronizer> make_synchronizer(std::vector<torch::Tensor> parameters,
                                                          std::vector<std::string> names) override;

 private:
  HorovodOptions options_;
  std::unique_ptr<ProcessGroup> gradient_group_;
};

}  // namespace fulgur
