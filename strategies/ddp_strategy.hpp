#pragma once

#include <fulgur/strategies/gradient_reducer.hpp>
#include <fulgur/strategies/process_group.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/strategies/timeline.hpp>

#include <memory>

namespace fulgur {

struct DDPStrategyOptions {
  /// Rendezvous, rank and world size, backend device and timeout.
  ProcessGroupOptions process_group;
  int64_t local_rank = 0;
  int64_t node_rank = 0;
  GradientReducer::Options reducer;
  /// Copy rank 0's buffers (BatchNorm running statistics) before every
  /// training step, as torch's DDP does by default: one broadcast of all
  /// buffers' bytes.
  bool broadcast_buffers = true;
  /// Chrome-trace file of the gradient collectives ("" = none); ranks other
  /// than 0 write beside it (Timeline::path_for_rank).
  std::string timeline_path;
};

/// Distributed data parallel: one process per device, each with a full copy
/// of the model and its own share of the data. Parameters and buffers start
/// equal (broadcast from rank 0 after every rank checked it has the same
/// shapes); gradients are averaged by bucketed allreduce overlapping
/// backward (GradientReducer); accumulation steps skip communication. A
/// module with manual optimization gets no reducer: manual_backward
/// averages the gradients it produced (average_gradients).
class DDPStrategy : public Strategy {
 public:
  DDPStrategy(Accelerator accelerator, PrecisionMode precision, DDPStrategyOptions options);
  ~DDPStrategy() override;

  std::string name() const override { return "ddp"; }
  int64_t world_size() const override { return options_.process_group.world_size; }
  int64_t global_rank() const override { return options_.process_group.rank; }
  int64_t local_rank() const override { return options_.local_rank; }
  int64_t node_rank() const override { return options_.node_rank; }

  void setup_environment() override;
  void setup(LightningModule& module) override;
  void teardown() override;

  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) override;
  torch::Tensor broadcast(const torch::Tensor& tensor, int64_t source_rank) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier(const std::string& name) override;

  void before_training_step() override;
  void backward(const torch::Tensor& loss, bool sync_gradients) override;
  void synchronize_gradients() override;
  void average_gradients(const std::vector<torch::Tensor>& parameters) override;
  std::vector<torch::Tensor> held_tensors() const override {
    return reducer_ ? reducer_->bucket_buffers() : std::vector<torch::Tensor>{};
  }

  ProcessGroup& process_group();
  const GradientReducer* reducer() const { return reducer_.get(); }

 protected:
  /// Every rank checks it has the same parameter shapes, then takes rank
  /// 0's parameters and buffers: the replicas start equal.
  void setup_replicas(LightningModule& module);
  /// The timeline file, or null when none was asked for.
  Timeline* timeline() { return timeline_.get(); }

 private:
  void check_same_shapes(LightningModule& module);
  void check_same_shape(const torch::Tensor& tensor, const char* operation);

  DDPStrategyOptions options_;
  std::unique_ptr<ProcessGroup> group_;
  std::unique_ptr<Timeline> timeline_;
  std::unique_ptr<GradientReducer> reducer_;
  LightningModule* module_ = nullptr;
  /// TORCH_DISTRIBUTED_DEBUG=DETAIL: all_reduce first compares the ranks' shapes.
  bool check_shapes_ = false;
  std::vector<torch::Tensor> buffers_;  // the module's, in order
  std::vector<int64_t> buffer_offsets_;  // where each starts in flat_buffers_
  torch::Tensor flat_buffers_;          // uint8: all of buffers_' bytes
};

}  // namespace fulgur
