#pragma once

#include <fulgur/modules/reduce_op.hpp>

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace fulgur {

class ProcessGroup;

/// Ring allreduce over a process group's point-to-point send/recv, the
/// algorithm Horovod and NCCL use: the buffer is cut into world-size chunks;
/// in n-1 reduce-scatter steps every rank sends one chunk to its right
/// neighbour and adds the chunk arriving from its left, so each rank ends up
/// owning one fully reduced chunk; n-1 all-gather steps then pass the reduced
/// chunks round the ring. Each chunk is streamed in segments: a segment is
/// forwarded as soon as it has arrived (and been added), so steps overlap and
/// large buffers pipeline. Every rank moves 2(n-1)/n of the buffer, whatever
/// n is. Works for any world size >= 1 and any length, including lengths
/// smaller than or not divisible by the world size (chunks differ by at most
/// one element; empty ones send nothing).
class RingAllreduce {
 public:
  struct Options {
    /// Bytes per streamed segment: small enough to pipeline, large enough
    /// that per-message overhead stays small.
    int64_t segment_bytes = 1 << 20;
    /// Reduce-scatter segments whose receive is announced ahead of time
    /// (each needs a scratch slot of segment_bytes); all-gather segments
    /// land in the buffer itself and are all announced at the start. Gloo
    /// sends only to an announced receive, so with 1 the sender stalls on
    /// every segment (twice the CPU per allreduce on 2 cores); 4 was as
    /// fast as 32 in bench/RESULTS.md.
    int64_t segments_in_flight = 4;
  };
  using Clock = std::chrono::steady_clock;
  /// Told when each phase ("reduce_scatter", "all_gather") starts and ends.
  using PhaseObserver = std::function<void(const std::string& phase, Clock::time_point start, Clock::time_point end)>;

  explicit RingAllreduce(ProcessGroup& group) : RingAllreduce(group, Options()) {}
  RingAllreduce(ProcessGroup& group, Options options);

  /// Reduces the contiguous `buffer` in place across all ranks (Sum, or
  /// Mean: the sum divided by the world size). Every rank calls it with the
  /// same length and dtype. Max / Min are not ring operations here. One
  /// call at a time per object: the scratch slots are reused.
  void run(torch::Tensor& buffer, ReduceOp op, const PhaseObserver& observer = nullptr);

  /// Elements per segment: segment_bytes worth, at least one, and enough
  /// that every (step, segment) pair of `steps` steps over chunks of up to
  /// `longest_chunk` elements gets its own int message tag.
  static int64_t segment_elements(int64_t segment_bytes, int64_t element_size, int64_t longest_chunk, int64_t steps);

 private:
  ProcessGroup& group_;
  Options options_;
  /// Reduce-scatter receive slots, kept between calls on the same object.
  torch::Tensor scratch_;
};

}  // namespace fulgur
