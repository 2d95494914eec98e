#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/clip_algorithm.hpp>
#include <fulgur/strategies/accelerator.hpp>
#include <fulgur/strategies/collectives/collective_wait.hpp>
#include <fulgur/strategies/device_batch.hpp>
#include <fulgur/strategies/precision.hpp>
#include <fulgur/modules/reduce_op.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

class DeviceMesh;
class LightningModule;
class ShardLayout;

/// How training is parallelised: which device this process uses, how
/// tensors are reduced/broadcast between processes, how gradients are
/// synchronised around backward and the optimizer step. It owns the
/// Precision plugin. A size-1 world is valid for every strategy.
class Strategy {
 public:
  Strategy(Accelerator accelerator, PrecisionMode precision, torch::Device root_device);
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  virtual std::string name() const = 0;

  // --- who am I ---------------------------------------------------------------
  virtual int64_t world_size() const { return 1; }
  virtual int64_t global_rank() const { return 0; }
  virtual int64_t local_rank() const { return 0; }
  virtual int64_t node_rank() const { return 0; }
  bool is_global_zero() const { return global_rank() == 0; }
  /// The processes that hold different data: the sampler shards over them,
  /// and metrics and log(sync_dist) reduce over them. Every process, except
  /// under model_parallel: the mesh's dp dimension (the ranks of a tp x cp
  /// block see the same batch and report the same values).
  virtual int64_t data_parallel_size() const { return world_size(); }
  virtual int64_t data_parallel_rank() const { return global_rank(); }
  /// The run's device mesh: every dimension of size 1 except under model_parallel.
  virtual DeviceMesh& device_mesh();

  // --- lifecycle --------------------------------------------------------------------
  /// Process-level set-up (process groups); runs before the module is touched.
  virtual void setup_environment();
  /// Once per module, after setup_environment: the module's
  /// configure_model(device_mesh()).
  virtual void configure_model(LightningModule& module);
  /// Moves the module to the root device and wraps its gradient path.
  virtual void setup(LightningModule& module);
  virtual void teardown() {}
  /// From any thread: makes the collectives in flight fail where the
  /// backend can (NCCL; Gloo's end when their peer does). The run is over.
  virtual void abort_collectives() {}
  /// From any thread: the collective this process waits in, if any.
  virtual std::optional<CollectiveWait::Now> collective_wait() const { return std::nullopt; }
  /// Once the optimizer exists (Horovod: broadcast its state from rank 0).
  virtual void setup_optimizers(torch::optim::Optimizer& /*optimizer*/) {}

  // --- collectives (identity on one process) ----------------------------------------
  virtual torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) = 0;
  virtual torch::Tensor broadcast(const torch::Tensor& tensor, int64_t source_rank = 0) = 0;
  /// `source_rank`'s `bytes` on every process (its length, then the bytes,
  /// through broadcast()); what others pass is ignored.
  std::string broadcast_bytes(const std::string& bytes, int64_t source_rank = 0);
  /// The largest `value` any process passes (every process must call it):
  /// decisions every rank has to take alike, such as whether anyone has
  /// evaluation batches.
  int64_t max_over_ranks(int64_t value);
  /// Every process's `bytes`, indexed by rank (lengths, then the bytes
  /// padded to the longest, through all_gather()).
  std::vector<std::string> all_gather_bytes(const std::string& bytes);
  /// Every process's `tensor` (the same shape on all) stacked along a new
  /// first dimension, indexed by rank.
  virtual torch::Tensor all_gather(const torch::Tensor& tensor) = 0;
  virtual void barrier(const std::string& name) = 0;
  /// all_reduce and all_gather over the data-parallel processes only
  /// (data_parallel_size()): what metrics and log(sync_dist) use.
  virtual torch::Tensor all_reduce_data_parallel(const torch::Tensor& tensor, ReduceOp op) { return all_reduce(tensor, op); }
  virtual torch::Tensor all_gather_data_parallel(const torch::Tensor& tensor) { return all_gather(tensor); }

  // --- the gradient path ----------------------------------------------------------
  /// Before each training_step (DDP: copy rank 0's buffers).
  virtual void before_training_step() {}
  /// Backward through the precision plugin. Inside a NoSync scope a
  /// distributed strategy leaves the gradients unsynchronised.
  virtual void backward(const torch::Tensor& loss);

  /// While alive, backward() does not synchronise gradients: the batches of
  /// an accumulation window before its last (DDP's no_sync()).
  class NoSync {
   public:
    explicit NoSync(Strategy& strategy) : strategy_(strategy) { strategy_.sync_gradients_ = false; }
    ~NoSync() { strategy_.sync_gradients_ = true; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Strategy& strategy_;
  };

  /// Gradient clipping for one optimizer step.
  struct Clip {
    double value;
    ClipAlgorithm algorithm;
  };
  /// The one optimizer step, for automatic and manual optimization alike,
  /// in two halves so the caller runs the on_before_optimizer_step hooks
  /// between them (on gradients in true units) without the strategy calling
  /// back: prepare_optimizer_step waits until gradients are the same on every
  /// process and unscales them once (float16); finish_optimizer_step clips
  /// them when `clip` is given, then steps through the precision plugin (a
  /// sharding strategy slices and gathers around the step). Returns whether
  /// the optimizer stepped (a gradient scaler skips steps with inf/NaN gradients).
  void prepare_optimizer_step(torch::optim::Optimizer& optimizer);
  bool finish_optimizer_step(torch::optim::Optimizer& optimizer, std::optional<Clip> clip = std::nullopt);
  /// Averages the gradients of `parameters` (those that have one) over the
  /// processes now, in one collective per dtype: manual optimization's
  /// manual_backward, where the strategy's backward hooks are not set up.
  virtual void average_gradients(const std::vector<torch::Tensor>& /*parameters*/) {}
  /// Unscales, then clips the gradients `optimizer` updates (synchronised); a
  /// sharding strategy takes the norm over every rank's shard.
  void clip_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm);

  /// Around an evaluation or prediction loop that runs `num_batches`
  /// batches on this rank: a strategy that shards parameters between steps
  /// (FULL_SHARD) gathers them for the loop. evaluation_batches_done() comes
  /// right after the last batch, before the epoch-end hooks (FULL_SHARD:
  /// ranks that ran fewer batches repeat the others' gathers there).
  /// Collectives: every rank calls them.
  virtual void before_evaluation(int64_t /*num_batches*/) {}
  virtual void evaluation_batches_done() {}
  virtual void after_evaluation() {}

  // --- sharded state (checkpoints, memory) ------------------------------------------
  /// Whether parameters hold only this rank's shard between steps (FULL_SHARD).
  virtual bool shards_parameters() const { return false; }
  /// Whether each rank's optimizer state covers only its shard of the parameters.
  virtual bool shards_optimizer_state() const { return false; }
  /// `tensor` (the parameter `param` itself, or an optimizer state tensor of
  /// it) as the whole model has it. Under a sharding strategy a collective:
  /// every rank calls it, for the same parameters in the same order.
  virtual torch::Tensor whole_tensor(const torch::Tensor& /*param*/, const torch::Tensor& tensor) { return tensor; }
  /// `tensor` whole over the data-parallel ranks only, as this rank's tp
  /// slice is: under fsdp along a model_parallel mesh's dp a collective over
  /// dp (every rank calls it, as whole_tensor); else `tensor`.
  virtual torch::Tensor data_parallel_whole_tensor(const torch::Tensor& /*param*/, const torch::Tensor& tensor) {
    return tensor;
  }
  /// This rank's part of `whole`, a tensor shaped like `param`'s whole value
  /// (anything else is returned as it is).
  virtual torch::Tensor local_tensor(const torch::Tensor& /*param*/, const torch::Tensor& whole) const {
    return whole;
  }
  /// The dimension along which `param` is split over a mesh's tp (each rank
  /// holds its tp rank's slice), or -1 where every rank holds it whole.
  virtual int64_t split_dim(const torch::Tensor& /*param*/) const { return -1; }
  /// Elements of `param` in the whole model (a sharded parameter holds fewer
  /// here); no collective. ModelSummary counts with it.
  virtual int64_t whole_numel(const torch::Tensor& param) const { return param.numel(); }
  /// Tensors the gradient path keeps between steps besides the parameters'
  /// own .grad (DDP buckets, gradient shards): counted by training_state_bytes.
  virtual std::vector<torch::Tensor> held_tensors() const { return {}; }
  /// The shard layout of a sharding strategy's parameters and optimizer
  /// state, which checkpoints are written and read by; null where every rank
  /// holds whole tensors.
  virtual const ShardLayout* shard_layout() const { return nullptr; }
  /// Whether checkpoints are written one file per rank (fsdp's sharded state dict).
  virtual bool sharded_state_dict() const { return false; }

  Batch batch_to_device(const Batch& batch) const;
  /// Starts moving `batch` to the root device. On CUDA a pinned batch is
  /// copied on a side stream, so it can travel while the step before it
  /// computes; elsewhere this is batch_to_device.
  DeviceBatch start_batch_to_device(const Batch& batch) const;
  /// The batch, ready for the compute stream (which waits for the copy).
  Batch finish_batch_to_device(DeviceBatch batch) const;
  /// Whether the training loop gains from starting the next batch's copy
  /// before the current step (a CUDA root device).
  bool copies_batches_ahead() const { return root_device_.is_cuda(); }
  const torch::Device& root_device() const { return root_device_; }
  const Accelerator& accelerator() const { return accelerator_; }
  Precision& precision() { return precision_; }

 protected:
  /// Whether configure_model ran for `module` already.
  bool configured(const LightningModule& module) const { return configured_ == &module; }
  /// Whether backward() synchronises gradients (false inside NoSync).
  bool sync_gradients() const { return sync_gradients_; }
  /// Waits until gradients are the same on every process (DDP: averaged).
  virtual void synchronize_gradients() {}
  /// The step itself, through the precision plugin.
  virtual bool step(torch::optim::Optimizer& optimizer);
  /// Clips gradients in true units.
  virtual void clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm);

 private:
  Accelerator accelerator_;
  torch::Device root_device_;
  Precision precision_;
  bool sync_gradients_ = true;
  std::unique_ptr<DeviceMesh> single_mesh_;  // every dimension 1
  const LightningModule* configured_ = nullptr;
};

}  // namespace fulgur
