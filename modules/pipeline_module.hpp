#pragma once

#include <fulgur/modules/lightning_module.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace fulgur {

/// What runs a PipelineModule's batches through its pipeline of ranks (the
/// strategy's, under model_parallel.pipeline_parallel_size > 1).
class PipelineExecutor {
 public:
  virtual ~PipelineExecutor() = default;
  /// Every micro-batch's forward and backward in the schedule's order;
  /// gradients accumulate `loss_scale` times the batch loss's. Returns the
  /// batch's loss (micro-batch losses weighted by their sizes) on every stage.
  virtual torch::Tensor train(const Batch& batch, double loss_scale) = 0;
  /// Forwards only: the batch's loss on every stage.
  virtual torch::Tensor evaluate(const Batch& batch) = 0;
};

/// A LightningModule whose model is a sequence of layers, each taking one
/// tensor and returning one, so that a pipeline can split it into stages.
/// Layers are built one at a time by make_layer(index), and each rank
/// builds only those of its own stages: a model too large for one device
/// never exists whole on one. make_layer runs with the random generator
/// seeded from the run's seed and the index, so a layer's initial weights
/// are the same whichever rank builds it, and the same as in one process.
///
///   struct Net : fulgur::PipelineModule {
///     Net() : PipelineModule(8) {}
///     torch::nn::AnyModule make_layer(int64_t i) override {
///       return torch::nn::AnyModule(torch::nn::Linear(64, 64));
///     }
///     torch::Tensor loss(const torch::Tensor& out, const fulgur::Batch& b) override {
///       return torch::mse_loss(out, b.target);
///     }
///     fulgur::OptimizerConfig configure_optimizers() override { ... }
///   };
///
/// The step is the pipeline's: training_step, validation_step and test_step
/// run the layers (in one process) or the schedule (on a pipeline) and log
/// the loss as train_loss, val_loss and test_loss (log_loss).
class PipelineModule : public LightningModule {
 public:
  explicit PipelineModule(int64_t num_layers);

  int64_t num_layers() const { return num_layers_; }
  /// Layer `index` of the model, built alone.
  virtual torch::nn::AnyModule make_layer(int64_t index) = 0;
  /// The first layer's input from a (micro-)batch: its input by default.
  virtual torch::Tensor layer_input(const Batch& batch) { return batch.input; }
  /// The last layer's output's loss against the (micro-)batch: a mean over
  /// its samples, so micro-batch losses weighted by their sizes make the batch's.
  virtual torch::Tensor loss(const torch::Tensor& output, const Batch& batch) = 0;
  /// Logs a step's loss as `<stage>_loss` (stage: train, val, test), on the
  /// progress bar; val and test with sync_dist (the epoch's value over every
  /// data-parallel replica). Under a pipeline every stage logs the same value.
  virtual void log_loss(const std::string& stage, const torch::Tensor& loss);

  torch::Tensor training_step(const Batch& batch, int64_t batch_idx) override;
  void validation_step(const Batch& batch, int64_t batch_idx) override;
  void test_step(const Batch& batch, int64_t batch_idx) override;
  /// Builds every layer not built yet (one process, or each rank of a
  /// tensor- or data-parallel mesh); on a pipeline the strategy built this
  /// rank's stages before. Call it first when overriding.
  void configure_model(DeviceMesh& mesh) override;

  /// Builds layers [first, last) that are not built yet, registered as
  /// `layers.<index>` (the same names however the model is split).
  void build_layers(int64_t first, int64_t last);
  bool has_layer(int64_t index) const { return layers_by_index_.count(index) != 0; }
  /// Layer `index`'s forward; an error names a layer this rank does not hold.
  torch::Tensor forward_layer(int64_t index, const torch::Tensor& input);
  /// The parameters of layer `index`.
  std::vector<torch::Tensor> layer_parameters(int64_t index);
  /// Layer `index` as make_layer built it, or null when this rank does not hold it.
  std::shared_ptr<torch::nn::Module> layer(int64_t index) const;
  /// Every layer in order: the whole model (one process).
  torch::Tensor forward(const torch::Tensor& input);

  /// Set by the strategy for its lifetime (null: one process runs the layers).
  void attach_pipeline(PipelineExecutor* pipeline) { pipeline_ = pipeline; }
  PipelineExecutor* pipeline() const { return pipeline_; }

 private:
  torch::Tensor batch_loss(const Batch& batch);

  int64_t num_layers_;
  std::shared_ptr<torch::nn::Module> layers_;
  std::map<int64_t, torch::nn::AnyModule> layers_by_index_;
  PipelineExecutor* pipeline_ = nullptr;
};

}  // namespace fulgur
