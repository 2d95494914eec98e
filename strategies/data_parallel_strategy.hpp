#pragma once

#include <fulgur/strategies/options/ddp_options.hpp>
#include <fulgur/strategies/collectives/gradient_synchronizer.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/model_parallel/device_mesh.hpp>
#include <fulgur/strategies/pipeline/pipeline_runner.hpp>
#include <fulgur/strategies/strategy.hpp>
#include <fulgur/strategies/collectives/timeline.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fulgur {

/// What every data-parallel strategy (ddp, horovod, fsdp) is given.
struct DataParallelOptions {
  /// Rendezvous, rank and world size, backend device and timeout.
  ProcessGroupOptions process_group;
  int64_t local_rank = 0;
  int64_t node_rank = 0;
  /// Chrome-trace file of the gradient collectives ("" = none); ranks other
  /// than 0 write beside it (Timeline::path_for_rank).
  std::string timeline_path;
  /// Strategy model_parallel: the mesh's shape. Gradients are then averaged
  /// over the ranks that differ in dp or cp, and parameters a plan split
  /// over tp are gathered for checkpoints and counted once in the norm.
  std::optional<DeviceMesh::Shape> mesh;
  /// A mesh with pp > 1: the order of the stages' passes, the micro-batches
  /// per batch, and the stages per rank (interleaved_1f1b).
  PipelineScheduleKind pipeline_schedule = PipelineScheduleKind::OneFOneB;
  int64_t microbatches = 1;
  int64_t virtual_stages = 1;
  /// A mesh's checkpoints: each rank's parts beside a metadata file
  /// (MeshShardedCheckpoint) instead of one whole file.
  bool sharded_checkpoint = false;
};

/// Data parallelism: one process per device, each with its own share of
/// the data. Parameters and buffers start equal (broadcast from rank 0
/// after every rank checked it has the same shapes); buffers are broadcast
/// again before each step; the collectives behind log(sync_dist) and the
/// metrics use the process group. How gradients are synchronised is the
/// GradientSynchronizer a subclass makes (make_synchronizer); accumulation
/// steps skip its communication. A module with manual optimization gets
/// none: manual_backward averages the gradients it produced
/// (average_gradients).
class DataParallelStrategy : public Strategy {
 public:
  /// `ddp`: the section every data-parallel strategy reads (buffer
  /// broadcast, the unused-parameter switch; ddp's buckets).
  DataParallelStrategy(Accelerator accelerator, PrecisionMode precision, DataParallelOptions options, DDPOptions ddp);
  ~DataParallelStrategy() override;

  int64_t world_size() const override { return options_.process_group.world_size; }
  int64_t global_rank() const override { return options_.process_group.rank; }
  int64_t local_rank() const override { return options_.local_rank; }
  int64_t node_rank() const override { return options_.node_rank; }
  int64_t data_parallel_size() const override;
  int64_t data_parallel_rank() const override;
  DeviceMesh& device_mesh() override;

  void setup_environment() override;
  /// Under a mesh: every rank takes rank 0's whole parameters first, so the
  /// parts a plan keeps are parts of one model. With pp > 1 the module must
  /// be a PipelineModule: this rank's stages are built and run by a
  /// PipelineRunner the module is attached to.
  void configure_model(LightningModule& module) override;
  /// setup_replicas, then the synchroniser (automatic optimization only).
  void setup(LightningModule& module) override;
  void teardown() override;
  void abort_collectives() override;
  std::optional<CollectiveWait::Now> collective_wait() const override { return waits_->current(); }

  torch::Tensor all_reduce(const torch::Tensor& tensor, ReduceOp op) override;
  torch::Tensor broadcast(const torch::Tensor& tensor, int64_t source_rank) override;
  torch::Tensor all_gather(const torch::Tensor& tensor) override;
  void barrier(const std::string& name) override;
  torch::Tensor all_reduce_data_parallel(const torch::Tensor& tensor, ReduceOp op) override;
  torch::Tensor all_gather_data_parallel(const torch::Tensor& tensor) override;

  void before_training_step() override;
  void backward(const torch::Tensor& loss) override;
  void average_gradients(const std::vector<torch::Tensor>& parameters) override;
  std::vector<torch::Tensor> held_tensors() const override {
    return synchronizer_ ? synchronizer_->held_tensors() : std::vector<torch::Tensor>{};
  }

  ProcessGroup& process_group();

  // Parameters a plan split over tp: whole for checkpoints, this rank's part on load.
  bool shards_parameters() const override { return !split_dims_.empty(); }
  bool sharded_state_dict() const override { return options_.sharded_checkpoint; }
  int64_t split_dim(const torch::Tensor& param) const override;
  bool shards_optimizer_state() const override { return !split_dims_.empty(); }
  torch::Tensor whole_tensor(const torch::Tensor& param, const torch::Tensor& tensor) override;
  torch::Tensor local_tensor(const torch::Tensor& param, const torch::Tensor& whole) const override;
  int64_t whole_numel(const torch::Tensor& param) const override;

 protected:
  void synchronize_gradients() override;
  void clip_unscaled_gradients(torch::optim::Optimizer& optimizer, double value, ClipAlgorithm algorithm) override;
  /// The ranks whose replicas hold the same parameters and average their
  /// gradients: every rank, or under a mesh those that differ in dp or cp;
  /// null when that is this rank alone.
  ProcessGroup* replicas();
  /// Strategy model_parallel: the run has a mesh.
  bool on_mesh() const { return options_.mesh.has_value(); }
  /// pp > 1: a PipelineRunner runs this rank's stages (from configure_model).
  bool pipelined() const { return pipeline_ != nullptr; }
  /// Clips `optimizer`'s gradients to the norm of the whole model's
  /// gradient: this rank adds the squares of the parameters `counts` (a
  /// whole one under tp on tp rank 0 only), then they are summed over
  /// `shards` (when given: fsdp's) and over tp.
  void clip_to_global_norm(torch::optim::Optimizer& optimizer, double value,
                           const std::function<bool(const torch::Tensor&)>& counts, ProcessGroup* shards);
  /// tp for a parameter a plan split over tp, else 1.
  int64_t split_factor(const torch::Tensor& param) const;
  /// The gradient path for the module's trainable parameters (in order, with their names).
  virtual std::unique_ptr<GradientSynchronizer> make_synchronizer(std::vector<torch::Tensor> parameters,
                                                                  std::vector<std::string> names) = 0;
  /// Every rank checks it has the same parameter shapes, then takes rank
  /// 0's parameters and buffers: the replicas start equal.
  void setup_replicas(LightningModule& module);
  /// The module's parameters and their names, in order: what a synchroniser is made for.
  static std::pair<std::vector<torch::Tensor>, std::vector<std::string>> named_parameters_of(LightningModule& module);
  /// Installs the gradient path (replacing any); null removes it.
  void set_synchronizer(std::unique_ptr<GradientSynchronizer> synchronizer);
  const GradientSynchronizer* synchronizer() const { return synchronizer_.get(); }
  /// The timeline file, or null when none was asked for.
  Timeline* timeline() { return timeline_.get(); }
  const DDPOptions& ddp_options() const { return ddp_; }

 private:
  /// Over the ranks that hold the same parameters (the replicas under a mesh).
  void check_same_shapes(LightningModule& module, ProcessGroup& group);
  void check_same_shape(const torch::Tensor& tensor, const char* operation);
  /// pp > 1: this rank's stages of `module` and the runner of its schedule.
  void make_pipeline(LightningModule& module);

  DataParallelOptions options_;
  DDPOptions ddp_;
  // Made with the strategy, not the group: a stop signal may ask while the group is being built.
  std::shared_ptr<CollectiveWait> waits_ = std::make_shared<CollectiveWait>();
  std::unique_ptr<ProcessGroup> group_;
  std::unique_ptr<DeviceMesh> mesh_;
  std::unique_ptr<PipelineRunner> pipeline_;
  struct Split {
    int64_t dim;
    int64_t whole;  // the size of that dimension in the whole model
  };
  std::map<const void*, Split> split_dims_;  // by TensorImpl
  std::unique_ptr<Timeline> timeline_;
  std::unique_ptr<GradientSynchronizer> synchronizer_;
  /// Manual optimization: backward passes no synchroniser (manual_backward averages).
  bool automatic_ = true;
  /// TORCH_DISTRIBUTED_DEBUG=DETAIL: all_reduce first compares the ranks' shapes.
  bool check_shapes_ = false;
  std::vector<torch::Tensor> buffers_;  // the module's, in order
  std::vector<int64_t> buffer_offsets_;  // where each starts in flat_buffers_
  torch::Tensor flat_buffers_;          // uint8: all of buffers_' bytes
};

}  // namespace fulgur
