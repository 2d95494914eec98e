#pragma once

#include <fulgur/strategies/collectives/gradient_ready_hooks.hpp>
#include <fulgur/strategies/collectives/gradient_synchronizer.hpp>
#include <fulgur/strategies/options/horovod_options.hpp>
#include <fulgur/strategies/collectives/stall_inspector.hpp>

#include <torch/torch.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace fulgur {

class FusionBuffer;
class ProcessGroup;
class RingAllreduce;
class Timeline;

/// The Horovod strategy's gradient path, run by a background thread the way
/// Horovod's controller runs. A post-accumulate-grad hook submits each
/// parameter's gradient as soon as backward has produced it; tensors count
/// as submitted in a fixed order (reverse registration, the order backward
/// usually produces them), so every rank's progress is one number. Every
/// cycle_time the thread exchanges these numbers with the other ranks (a
/// tiny all-gather on the group it owns), takes the tensors every rank has
/// submitted, packs them into fusion buffers of at most fusion_threshold
/// bytes, reduces each with the ring allreduce (NCCL's allreduce for CUDA
/// buffers), optionally as float16 on the wire, and copies the averages back
/// into the gradients. The same exchange feeds rank 0's StallInspector.
/// Because every rank decides from the same exchanged numbers, the
/// collectives pair up without a coordinator rank; the one exception is the
/// stall shutdown, which rank 0 decides alone (as Horovod's coordinator does)
/// and announces in the next exchange, so every rank's thread leaves after
/// the same collective and none is left waiting in one. After a stall
/// shutdown every rank's next prepare()/finish() throws the shutdown's
/// message; a rank whose training thread is stuck in its own code throws
/// once that code returns (and a launcher — fulgur's, torchrun, srun with
/// --kill-on-bad-exit — ends it as soon as another rank has failed).
class HorovodController : public GradientSynchronizer {
 public:
  /// `options`: fusion threshold, cycle time, compression and the stall
  /// limits; with `find_unused_parameters` a parameter without a gradient
  /// counts as zero instead of being an error. `group` is used by the
  /// background thread only; `timeline` may be null.
  HorovodController(std::vector<torch::Tensor> parameters, std::vector<std::string> names, ProcessGroup& group,
                    const HorovodOptions& options, bool find_unused_parameters, Timeline* timeline);
  /// Stops the thread (telling the other ranks) and removes the hooks.
  ~HorovodController() override;
  HorovodController(const HorovodController&) = delete;
  HorovodController& operator=(const HorovodController&) = delete;

  /// Before backward: `sync` false skips communication (local accumulation).
  void prepare(bool sync) override;
  /// After backward: waits until this step's gradients are averaged.
  void finish() override;

  /// Collectives (fused allreduces) the last completed step needed.
  int64_t collectives_last_step() const;
  int64_t num_tensors() const { return static_cast<int64_t>(order_.size()); }

 private:
  void on_gradient_ready(size_t position);
  void advance_prefix();
  void run();
  void reduce(int64_t first, int64_t last);
  std::string tensor_name(int64_t running_index) const;
  void fail(const std::string& message);

  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> names_;
  ProcessGroup& group_;
  HorovodOptions options_;
  bool find_unused_parameters_;
  int64_t fusion_threshold_bytes_;
  std::chrono::microseconds cycle_time_;
  bool fp16_compression_;  // gradients travel as float16 (half the bytes)
  static constexpr int64_t kSegmentBytes = 1 << 20;  // the ring's segment (RingAllreduce::Options)
  Timeline* timeline_;
  StallInspector inspector_;

  std::vector<size_t> order_;       // submission position -> parameter index
  std::vector<int64_t> position_;   // parameter index -> position, -1 if frozen

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool syncing_ = false;
  int64_t steps_begun_ = 0;         // steps whose gradients are communicated
  std::vector<std::chrono::steady_clock::time_point> ready_at_;
  int64_t prefix_ = 0;              // positions 0..prefix_-1 of this step are submitted
  int64_t submitted_ = 0;           // running count over all steps
  int64_t reduced_ = 0;             // running count reduced by the thread
  int64_t collectives_this_step_ = 0;
  int64_t collectives_last_step_ = 0;
  int64_t collectives_total_ = 0;
  bool stop_requested_ = false;
  bool thread_done_ = false;
  std::optional<std::string> error_;
  std::unique_ptr<FusionBuffer> fusion_;  // used by the thread only
  std::unique_ptr<RingAllreduce> ring_;   // used by the thread only; its scratch is reused
  std::thread thread_;
  std::optional<GradientReadyHooks> hooks_;  // by position, current step
};

}  // namespace fulgur
