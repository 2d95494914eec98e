#pragma once

// Part of the fulgur_mpi module (links MPI), never of the fulgur library.

#include <fulgur/strategies/mpi/mpi_engine.hpp>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fulgur {

/// c10d's Backend interface over an MPI communicator, for
/// process_group_backend 'mpi' (LibTorch's own ProcessGroupMPI exists only
/// in builds from source with MPI; the wheels have none). Every operation
/// is queued on the group's own MpiEngine (a thread started with the group
/// and joined by shutdown()) and returns a Work that completes when MPI has
/// finished it. The group works on its own duplicate of the communicator it
/// is given, so its messages never meet the program's. The groups hold the
/// process's MPI through one MpiSession: the first begins MPI when the
/// program has not, the last one ended finalises what fulgur began.
///
/// CUDA tensors: where the MPI is CUDA-aware (MPIX_Query_cuda_support) they
/// go to MPI as they are; otherwise through pinned host memory. Either way
/// the caller's stream is synchronised when the operation is queued.
class MpiProcessGroup : public c10d::Backend {
 public:
  /// The group of `comm`'s ranks (duplicated). `expected_rank`/`expected_size`
  /// are what the cluster environment says; a mismatch is a clear error
  /// (ranks not started by an MPI launcher). Initialises MPI when the
  /// program has not (MpiSession); checks the thread level when it has.
  static c10::intrusive_ptr<MpiProcessGroup> create(MPI_Comm comm, int expected_rank, int expected_size);

  /// The ranks of this group that call it with the same `name`, numbered
  /// `rank` of `size` (collective over this group).
  c10::intrusive_ptr<MpiProcessGroup> split(const std::string& name, int rank, int size);

  ~MpiProcessGroup() override;

  const std::string getBackendName() const override { return "mpi"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

  /// A run failed or was stopped on this rank: every operation of this
  /// group waited for fails at once (MpiEngine::abort), and MPI is not
  /// finalised, so the launcher ends the other ranks instead of this one
  /// waiting for them. Other groups of the process go on.
  void abort() override;
  /// Frees the communicators and joins the engine.
  void shutdown() override;

  /// Takes `comm` (already this group's own); create() and split() make them.
  MpiProcessGroup(MPI_Comm comm, int rank, int size, std::shared_ptr<MpiSession> session);

  /// All-reduces and reduce-scatters of at least this many bytes run as
  /// rings (MpiRingAllreduce, MpiRingReduceScatter); smaller ones as
  /// MPI_Iallreduce and MPI_Ireduce_scatter_block (whose latency is the lower).
  static constexpr int64_t kRingBytes = int64_t{4} << 20;
  /// The rings' segments.
  static constexpr int64_t kRingSegmentBytes = int64_t{1} << 20;

 private:
  /// Queues an operation on the engine: `begin` starts it and returns how
  /// to poll it; the Work completes when the poll says so.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const std::vector<at::Tensor>& tensors,
                                         std::function<MpiEngine::Poll()> begin);

  /// The first of `tags` tags for the next ring (engine thread only).
  int ring_tag_base(int64_t tags);
  /// A finished ring's scratch for the next one, so rings allocate nothing (engine thread only).
  at::Tensor take_ring_scratch();
  void give_ring_scratch(const at::Tensor& scratch);

  MPI_Comm comm_;
  MPI_Comm ring_comm_ = MPI_COMM_NULL;  // the ring's own messages, apart from send()/recv()'s
  int64_t next_ring_tag_ = 0;           // where the next ring's tags begin
  int ring_tag_span_ = 1;               // tags available to the rings (MPI_TAG_UB)
  std::vector<at::Tensor> ring_scratch_;  // finished rings' scratch, for the next ones (engine thread only)
  std::shared_ptr<MpiEngine> engine_;     // the group's thread; MpiWork holds it weakly
};

}  // namespace fulgur
