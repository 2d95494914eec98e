#pragma once

#include <fulgur/modules/pipeline_module.hpp>
#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/collectives/timeline.hpp>
#include <fulgur/strategies/pipeline/pipeline_schedule.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace fulgur {

/// Runs a PipelineModule's batches through the ranks of a pipeline group
/// (the mesh's pp dimension) in a schedule's order: each rank runs the
/// passes of its own stages and sends activations forward and their
/// gradients back, point to point. A receive is posted one pass ahead, so
/// it travels while the pass before it computes; sends are waited at the
/// step's end. The first stage reads a micro-batch's input, the last its
/// target and computes the loss, which every stage gets back.
class PipelineRunner : public PipelineExecutor {
 public:
  /// Builds this rank's stages' layers in `module` (split evenly: stage s
  /// holds layers [s L / S, (s+1) L / S)). Refuses more stages than layers.
  PipelineRunner(PipelineModule& module, ProcessGroup& pipeline, PipelineSchedule schedule, Timeline* timeline);

  torch::Tensor train(const Batch& batch, double loss_scale) override;
  torch::Tensor evaluate(const Batch& batch) override;

  const PipelineSchedule& schedule() const { return schedule_; }
  /// The layers stage `stage` holds: [first, last).
  std::pair<int64_t, int64_t> layers_of(int64_t stage) const;
  /// The most micro-batches whose activations this rank held at once, over the run.
  int64_t peak_in_flight() const { return peak_in_flight_; }

 private:
  /// What a micro-batch's forward through one stage keeps for its backward.
  struct Pass {
    torch::Tensor input;                 // the received activation (a leaf), or undefined on stage 0
    std::vector<torch::Tensor> inputs;   // zero_bubble: each layer's input (a leaf)
    std::vector<torch::Tensor> outputs;  // each layer's output (the last stage's last: its loss); else only the stage's
    std::vector<torch::Tensor> output_grads;  // zero_bubble, after the input gradient: for the weight gradient
  };
  using Key = std::pair<int64_t, int64_t>;  // stage, micro-batch

  torch::Tensor run(const std::vector<PipelineAction>& actions, const Batch& batch, double loss_scale, bool training);
  void forward(const PipelineAction& action, bool training);
  void backward(const PipelineAction& action);
  void backward_input(const PipelineAction& action);
  void backward_weight(const PipelineAction& action);
  /// The activation `action` (a forward) or its output's gradient (a backward) needs from another rank, if any.
  std::optional<std::tuple<int64_t, int, std::vector<int64_t>>> incoming(const PipelineAction& action) const;
  void post_receive(const PipelineAction& action);
  torch::Tensor receive(const PipelineAction& action);
  void send(torch::Tensor tensor, int64_t stage, int tag);
  int tag(int64_t stage, int64_t microbatch, bool gradient) const;
  /// This step's activation shape past the batch dimension and its dtype, from stage `stage - 1` (once per step).
  void receive_layout(int64_t stage);
  /// The timeline's block of `action`: from when its input was there to its end (waiting is idle).
  void record(const PipelineAction& action, Timeline::Clock::time_point start);

  PipelineModule& module_;
  ProcessGroup& group_;
  PipelineSchedule schedule_;
  Timeline* timeline_;
  torch::Device device_{torch::kCPU};
  bool zero_bubble_ = false;

  // One step's state.
  std::vector<Batch> microbatches_;
  double loss_scale_ = 1;
  int64_t batch_size_ = 0;
  torch::Tensor loss_sum_;
  std::map<Key, Pass> passes_;
  std::map<std::pair<Key, bool>, std::pair<torch::Tensor, c10::intrusive_ptr<c10d::Work>>> receives_;
  std::vector<std::pair<torch::Tensor, c10::intrusive_ptr<c10d::Work>>> sends_;
  std::map<int64_t, std::pair<std::vector<int64_t>, c10::ScalarType>> layouts_;  // by receiving stage
  Timeline::Clock::time_point ready_;  // when the current pass had its input
  int64_t held_ = 0;
  int64_t peak_in_flight_ = 0;
  int64_t step_ = 0;
};

}  // namespace fulgur
