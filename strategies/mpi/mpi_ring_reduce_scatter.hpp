#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <fulgur/strategies/mpi/mpi_reducer.hpp>

#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/torch.h>

#include <mpi.h>

#include <array>
#include <atomic>
#include <memory>
#include <vector>

namespace fulgur {

/// A reduce-scatter of a large tensor as a ring over MPI_Isend/MPI_Irecv:
/// the reduce-scatter half of MpiRingAllreduce, in segments that travel on
/// as soon as they are reduced (on the group's MpiReducer), polled by
/// its MpiEngine. For 12 MiB on two ranks it takes 1.9 ms where Open MPI's
/// MPI_Ireduce_scatter_block takes 3.5 to 7.5 (bench/RESULTS.md). Rank r ends
/// with the reduction of chunk r of every rank's input in `output`; the
/// input is read, never written. Both contiguous, of one type that tensor
/// arithmetic reduces, the input size times the output's.
class MpiRingReduceScatter {
 public:
  /// `spare`: an earlier ring's scratch() (or an undefined tensor), used
  /// when its type and size fit.
  MpiRingReduceScatter(at::Tensor output, at::Tensor input, c10d::ReduceOp op, MPI_Comm comm, int tag_base,
                       int64_t segment_bytes, MpiReducer& reducer, at::Tensor spare = {});
  /// The tags a ring with `numel` output elements uses (from tag_base on):
  /// one per segment and step.
  static int64_t tags(int64_t numel, int size, int64_t element_size, int64_t segment_bytes);
  /// Starts what can start and reduces what has arrived; true once done.
  bool poll();
  /// Where partial sums wait between steps: two slots per segment in flight
  /// (none on two ranks).
  at::Tensor scratch() const { return slots_; }

 private:
  struct Segment {
    int64_t begin = 0;   // element offset inside a chunk
    int64_t length = 0;  // elements
    int step = 0;        // 0 .. size-2, then done
    int64_t slot = 0;    // its slot pair in slots_ while in flight
    std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::shared_ptr<std::atomic<bool>> reduced;  // set while MpiReducer adds this step's input
  };
  /// Chunk `index` (mod size) of `t`.
  at::Tensor chunk(const at::Tensor& t, int index) const;
  /// Where step `step` of a segment receives (the output at the last step).
  at::Tensor received(const Segment& s, int step) const;
  void post(size_t k);

  at::Tensor output_, input_, slots_;
  c10d::ReduceOp op_;
  MpiReducer& reducer_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, tag_base_ = 0;
  int64_t per_segment_ = 1;  // elements
  std::vector<Segment> segments_;
  size_t started_ = 0;
  size_t done_ = 0;
  static constexpr size_t kInFlight = 4;
};

}  // namespace fulgur
