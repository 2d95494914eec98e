#pragma once

#include <fulgur/modules/clip_algorithm.hpp>
#include <fulgur/modules/lightning_optimizer.hpp>
#include <fulgur/modules/reduce_op.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fulgur {

class Trainer;

/// What a LightningModule sees of the run it is part of: its device, its
/// rank, collectives over every process, and the gradient path of manual
/// optimization. The Trainer attaches one while it runs a module; kept here
/// (like MetricSink) so the module layer does not depend on the trainer.
class ModuleRuntime {
 public:
  virtual ~ModuleRuntime() = default;

  /// The Trainer running the module (LightningModule::trainer()).
  virtual Trainer* trainer() = 0;
  virtual torch::Device device() const = 0;
  virtual int64_t global_rank() const = 0;
  /// The processes that hold different data: every process, except under
  /// strategy model_parallel, where it is the mesh's dp dimension (the
  /// ranks of one tp x cp block hold the same batch). all_reduce and
  /// all_gather run over these (metrics sync over them).
  virtual int64_t world_size() const = 0;
  /// `tensor` reduced over the data-parallel processes (a copy; each must call it).
  virtual torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) = 0;
  /// Every data-parallel process's `tensor` (same shape on all) stacked
  /// along a new first dimension, indexed by its rank among them.
  virtual torch::Tensor all_gather(const torch::Tensor& tensor) = 0;

  /// configure_optimizers' optimizers and schedulers of the running fit.
  virtual std::vector<std::shared_ptr<LightningOptimizer>> optimizers() = 0;
  virtual std::vector<std::shared_ptr<torch::optim::LRScheduler>> lr_schedulers() = 0;

  /// Backward through the precision plugin, then the strategy's gradient
  /// synchronisation, with the backward hooks around it.
  virtual void manual_backward(const torch::Tensor& loss) = 0;
  /// Steps the module's optimizer `index` through the precision plugin
  /// (on_before_optimizer_step first); counts one global step.
  virtual void optimizer_step(size_t index) = 0;
  /// Clips the gradients of `optimizer`'s parameters (unscaled first).
  virtual void clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) = 0;
};

}  // namespace fulgur
