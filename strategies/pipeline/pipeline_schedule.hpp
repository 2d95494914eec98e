#pragma once

#include <fulgur/strategies/options/model_parallel_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

/// One pass of one micro-batch through one stage.
struct PipelineAction {
  enum class Kind {
    Forward,
    Backward,        // input and weight gradients together
    BackwardInput,   // zero_bubble: the input gradient, which the stage before waits for
    BackwardWeight,  // zero_bubble: the weight gradient, which nothing waits for
  };
  Kind kind;
  int64_t stage;
  int64_t microbatch;
};

/// Which stage runs which pass of which micro-batch, in what order, on each
/// rank of a pipeline. The model is split into `ranks * virtual_stages`
/// stages; stage s runs on rank s % ranks (interleaved_1f1b gives each rank
/// several stages, one per chunk of the model). Each rank's list is an order
/// the whole pipeline can run in: checked by simulate(), which no real
/// rank needs.
class PipelineSchedule {
 public:
  /// `virtual_stages` counts only for interleaved_1f1b (1 for the others).
  /// Refuses a shape the schedule cannot run, naming the numbers.
  PipelineSchedule(PipelineScheduleKind kind, int64_t ranks, int64_t microbatches, int64_t virtual_stages = 1);

  PipelineScheduleKind kind() const { return kind_; }
  int64_t ranks() const { return ranks_; }
  int64_t stages() const { return ranks_ * virtual_; }
  int64_t microbatches() const { return microbatches_; }
  int64_t rank_of(int64_t stage) const { return stage % ranks_; }
  /// The stages `rank` runs, first to last.
  std::vector<int64_t> stages_of(int64_t rank) const;
  /// `rank`'s passes of a training step, in order.
  const std::vector<PipelineAction>& actions(int64_t rank) const { return actions_.at(static_cast<size_t>(rank)); }
  /// `rank`'s passes of an evaluation step: forwards only, micro-batch by micro-batch.
  std::vector<PipelineAction> forward_actions(int64_t rank) const;

  /// Runs every rank's list with the given pass times and no transfer time.
  struct Simulation {
    double step_time = 0;
    /// Idle time over step time, averaged over ranks.
    double bubble = 0;
    /// Per rank: the most micro-batches whose activations were held at once.
    std::vector<int64_t> peak_in_flight;
  };
  /// `backward_input` + `backward_weight` is a whole backward pass. Throws
  /// std::logic_error if the lists cannot all finish (an order that would deadlock).
  Simulation simulate(double forward, double backward_input, double backward_weight) const;
  /// The textbook bubble of this schedule with equal pass times (forward =
  /// input gradient = weight gradient): (p-1)/(m+p-1) for gpipe and 1f1b,
  /// (p-1)/(v m+p-1) interleaved, and ZB-H1's third of 1f1b's idle time.
  double expected_bubble() const;

 private:
  void build_gpipe();
  void build_1f1b();
  void build_interleaved();
  void build_zero_bubble();

  PipelineScheduleKind kind_;
  int64_t ranks_;
  int64_t microbatches_;
  int64_t virtual_;
  std::vector<std::vector<PipelineAction>> actions_;
};

std::string to_string(const PipelineAction& action);

}  // namespace fulgur
