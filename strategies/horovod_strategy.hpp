#pragma once

#include <fulgur/strategies/ddp_strategy.hpp>
#include <fulgur/strategies/horovod_controller.hpp>

#include <memory>

namespace fulgur {

struct HorovodStrategyOptions {
  /// Process group, ranks, buffer broadcast and timeline, as for DDP.
  DDPStrategyOptions ddp;
  HorovodController::Options controller;
  bool broadcast_optimizer_state = true;
};

/// Horovod's data parallelism done natively: parameters (and, once the
/// optimizer exists, its state) are broadcast from rank 0; gradients are
/// averaged by a HorovodController — tensor fusion, ring allreduce over
/// point-to-point send/recv, optional float16 compression, stall
/// inspection — on a background thread with its own process group, while
/// metrics, broadcasts and barriers use the main group as in DDP. Scaling
/// the learning rate by the world size is left to the user.
class HorovodStrategy : public DDPStrategy {
 public:
  HorovodStrategy(Accelerator accelerator, PrecisionMode precision, HorovodStrategyOptions options);
  ~HorovodStrategy() override;

  std::string name() const override { return "horovod"; }

  void setup_environment() override;
  void setup(LightningModule& module) override;
  void teardown() override;
  void setup_optimizers(torch::optim::Optimizer& optimizer) override;

  void backward(const torch::Tensor& loss, bool sync_gradients) override;
  void synchronize_gradients() override;

  const HorovodController* controller() const { return controller_.get(); }

 private:
  HorovodStrategyOptions options_;
  std::unique_ptr<ProcessGroup> gradient_group_;
  std::unique_ptr<HorovodController> controller_;
};

}  // namespace fulgur
