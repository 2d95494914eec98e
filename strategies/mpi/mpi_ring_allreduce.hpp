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

/// An all-reduce of a large tensor as a ring (reduce-scatter, then
/// all-gather) over MPI_Isend/MPI_Irecv, in segments that travel on as soon
/// as they are reduced (on the group's MpiReducer), polled by its MpiEngine. From
/// 4 MiB on it moves 2 to 3 times the bytes per second of Open MPI's
/// MPI_Iallreduce on two ranks of one machine (bench/RESULTS.md), and being
/// nonblocking it never holds the engine. The tensor must be contiguous and of a type
/// tensor arithmetic reduces (it is reduced in place).
class MpiRingAllreduce {
 public:
  /// `spare`: an earlier ring's scratch() (or an undefined tensor), used when
  /// its type and size fit, so that an all-reduce allocates nothing (fresh
  /// pages cost a fault each: a quarter of the time of a 64 MB all-reduce).
  MpiRingAllreduce(at::Tensor tensor, c10d::ReduceOp op, MPI_Comm comm, int tag_base, int64_t segment_bytes,
                   MpiReducer& reducer, at::Tensor spare = {});
  /// The tags a ring over `numel` elements uses (from tag_base on): one per
  /// segment and step.
  static int64_t tags(int64_t numel, int size, int64_t element_size, int64_t segment_bytes);
  /// Starts what can start and reduces what has arrived; true once done.
  bool poll();
  /// Where segments land before they are reduced: kInFlight of them.
  at::Tensor scratch() const { return incoming_; }

 private:
  struct Segment {
    int64_t begin = 0;   // element offset inside its chunk
    int64_t length = 0;  // elements
    int step = 0;        // 0 .. 2(size-1)-1, then done
    int64_t slot = 0;    // its place in incoming_ while in flight
    std::array<MPI_Request, 2> requests{MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::shared_ptr<std::atomic<bool>> reduced;  // set while MpiReducer adds this step's bytes
  };
  at::Tensor chunk(int index) const;
  void post(size_t k);

  at::Tensor tensor_;
  at::Tensor incoming_;  // kInFlight segments: where reduce-scatter receives before reducing
  c10d::ReduceOp op_;
  MpiReducer& reducer_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, tag_base_ = 0;
  std::vector<int64_t> chunk_begin_;  // size_ + 1 offsets
  int64_t per_segment_ = 1;           // elements
  std::vector<Segment> segments_;
  size_t started_ = 0;  // segments posted so far (in order)
  size_t done_ = 0;
  static constexpr size_t kInFlight = 4;
};

}  // namespace fulgur
