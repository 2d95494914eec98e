#pragma once

#include <fulgur/modules/batch.hpp>
#include <fulgur/modules/metric_sink.hpp>
#include <fulgur/modules/optimizer_config.hpp>

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

struct TrainerConfig;
class LightningModule;

/// Records a graph of the device work a function queues, and replays it.
/// The CUDA graph lives in the fulgur_cuda module; the step logic's tests
/// pass a stand-in.
struct GraphCapture {
  /// Records what `body` queues; returns the graph, or null with `error` set.
  std::function<std::shared_ptr<void>(const std::function<void()>& body, std::string& error)> capture;
  /// Runs a recorded graph again.
  std::function<void(const std::shared_ptr<void>& graph)> replay;

  /// CUDA graphs on `device` (needs the fulgur_cuda module).
  static GraphCapture cuda(int64_t device);
};

/// The Trainer's cuda_graph option. After `warmup` eager steps the training
/// step (training_step, backward, optimizer step) is captured once into a
/// CUDA graph; every later batch of the same shapes is copied into the
/// graph's static input buffers and the graph is replayed, one launch
/// instead of hundreds. What training_step logs is recorded at capture and
/// logged again after each replay. Hooks inside the step
/// (on_before_backward, on_after_backward, on_before_optimizer_step) run at
/// capture only. A step that cannot be captured runs eager, and one line on
/// stderr says why (`fulgur: cuda_graph: ...`).
class CudaGraphStep {
 public:
  /// Off.
  CudaGraphStep() = default;
  /// Captures with `capture` after `warmup` eager steps.
  CudaGraphStep(GraphCapture capture, int64_t warmup);

  /// Why no step of this run can be captured, or nullopt when capture can
  /// be tried: it needs a GPU, one process (single_device), 32-true or
  /// bf16-mixed, automatic optimization without clipping, an optimizer whose
  /// step keeps no host state (SGD) and no scheduler stepping every step
  /// (the graph holds the learning rate it was captured with; after an
  /// epoch scheduler changes it, the step is captured again).
  static std::optional<std::string> refusal(const TrainerConfig& config, const LightningModule& module,
                                            const std::vector<OptimizerConfig>& optimizers);

  /// For a fit with the cuda_graph option: off, with one line saying why
  /// (when `verbose`), where refusal() has a reason; else on `device`.
  static CudaGraphStep for_run(const TrainerConfig& config, const LightningModule& module,
                               const std::vector<OptimizerConfig>& optimizers, const torch::Device& device,
                               bool verbose);

  bool enabled() const { return static_cast<bool>(capture_.capture); }
  bool captured() const { return graph_ != nullptr; }
  /// Captures after the first, each after an epoch scheduler changed the learning rate.
  int64_t recaptures() const { return recaptures_; }
  /// Eager steps from now on; prints `why` once.
  void disable(const std::string& why);

  struct Result {
    torch::Tensor loss;
    /// True when the graph ran the step: the gradients were not left in
    /// the parameters' grad, so there is nothing to zero.
    bool replayed = false;
  };
  /// Runs the step for `batch`: eager while warming up (watching what it
  /// logs), then captured once, then replayed for each batch of the
  /// captured shapes; eager for other shapes or after a failed capture.
  /// `body` is the eager step without zeroing the gradients afterwards;
  /// `results` receives what training_step logs.
  Result step(const Batch& batch, LightningModule& module, MetricSink& results, torch::optim::Optimizer& optimizer,
              const std::function<torch::Tensor(const Batch&)>& body);

 private:
  struct Logged {
    std::string name;
    torch::Tensor value;
    LogOptions options;
  };
  /// Captures the step; on failure disables and says why.
  void capture(const Batch& batch, LightningModule& module, torch::optim::Optimizer& optimizer,
               const std::function<torch::Tensor(const Batch&)>& body);
  /// Copies `batch` into the static inputs, replays, logs what the step logs.
  torch::Tensor replay(const Batch& batch, MetricSink& results);
  bool same_shapes(const Batch& batch) const;

  GraphCapture capture_;
  int64_t warmup_ = 0;
  int64_t eager_steps_ = 0;
  std::shared_ptr<void> graph_;
  Batch static_batch_;
  torch::Tensor static_loss_;
  std::vector<Logged> logged_;
  /// The gradients the graph writes (kept alive with it).
  std::vector<torch::Tensor> static_grads_;
  bool warned_shapes_ = false;
  /// The learning rates the graph holds; another (an epoch scheduler stepped) means a new capture.
  std::vector<double> captured_lrs_;
  int64_t recaptures_ = 0;
};

}  // namespace fulgur
