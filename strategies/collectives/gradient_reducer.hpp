#pragma once

#include <fulgur/strategies/options/ddp_options.hpp>
#include <fulgur/strategies/collectives/gradient_ready_hooks.hpp>
#include <fulgur/strategies/collectives/gradient_synchronizer.hpp>

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace c10d {
class Work;
}

namespace fulgur {

class ProcessGroup;
class Timeline;

/// DDP's gradient path: parameters are grouped into buckets (in reverse
/// registration order, the order backward produces gradients; the first
/// bucket small so communication starts early). Every bucket is one flat
/// buffer and every parameter's .grad is a view into it (as torch DDP's
/// gradient_as_bucket_view), so backward accumulates straight into the
/// buffer: no copy in, no copy out. A post-accumulate-grad hook on every
/// parameter counts it in; when a bucket is complete an asynchronous
/// allreduce of its buffer starts while backward is still running. finish()
/// waits for all of them; the averaged gradients are then in place. Buckets
/// launch strictly in index order on every rank, so the collectives pair up
/// even if gradients arrive in a different order. Small CPU buckets are the
/// exception: they are reduced right away on the calling thread
/// (kRingBytes).
class GradientReducer : public GradientSynchronizer {
 public:
  /// Buckets hold `options.bucket_cap_mb` (the first at most 1 MiB, so
  /// communication starts early in backward); `options.find_unused_parameters`
  /// lets a parameter without a gradient count as zero. `timeline` (may be
  /// null) gets QUEUE and ALLREDUCE events for every bucket.
  GradientReducer(std::vector<torch::Tensor> parameters, std::vector<std::string> names, ProcessGroup& group,
                  const DDPOptions& options, Timeline* timeline = nullptr);
  ~GradientReducer() override;
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Before backward: `sync` false skips all communication (accumulation).
  /// Gradients that are not views into their bucket (set to none by
  /// zero_grad, or replaced) become views again, with their values.
  void prepare(bool sync) override;
  /// After backward, before the optimizer: waits and averages.
  void finish() override;

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
  /// Buckets whose allreduce started during backward in the last step.
  int64_t buckets_launched_in_backward() const { return launched_in_backward_; }
  /// Seconds finish() has spent waiting for allreduce results, in total:
  /// the communication backward did not hide.
  double total_wait_seconds() const { return total_wait_seconds_; }
  /// The flat bucket buffers (the gradients are views of them).
  std::vector<torch::Tensor> held_tensors() const override {
    std::vector<torch::Tensor> out;
    for (const auto& b : buckets_) out.push_back(b.buffer);
    return out;
  }

 private:
  /// The first bucket fills first in backward: a small one starts communication early.
  static constexpr int64_t kFirstBucketBytes = 1 << 20;
  /// CPU buckets of at most this many bytes are averaged by the ring on the
  /// thread that completes them (ProcessGroup::ring_all_reduce), not by
  /// Gloo's asynchronous allreduce: for small buckets Gloo's thread
  /// hand-offs cost more than the overlap with backward saves.
  static constexpr int64_t kRingBytes = 1 << 20;

  struct Bucket {
    std::vector<size_t> params;  // indices into parameters_
    int64_t numel = 0;
    int64_t pending = 0;
    torch::Tensor buffer;  // every gradient of the bucket, flat
    c10::intrusive_ptr<c10d::Work> work;
    // For the timeline: first gradient ready, allreduce start, ring end.
    std::chrono::steady_clock::time_point first_ready, launched, ring_done;
  };

  void on_gradient_ready(size_t param_index);
  void launch_ready_buckets();
  void launch(Bucket& bucket);

  std::vector<torch::Tensor> parameters_;
  std::vector<std::string> names_;
  ProcessGroup& group_;
  DDPOptions options_;
  Timeline* timeline_;
  int64_t collectives_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter index -> bucket index
  std::vector<torch::Tensor> views_;  // parameter index -> its gradient's place in the bucket
  size_t next_to_launch_ = 0;
  bool syncing_ = false;
  bool in_backward_ = false;
  int64_t launched_in_backward_ = 0;
  double total_wait_seconds_ = 0.0;
  GradientReadyHooks hooks_;  // by parameter index; last, so its hooks go first
};

}  // namespace fulgur
