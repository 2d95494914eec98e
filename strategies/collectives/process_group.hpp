#pragma once

#include <fulgur/strategies/environments/cluster_environment.hpp>
#include <fulgur/strategies/collectives/collective_wait.hpp>
#include <fulgur/modules/reduce_op.hpp>
#include <fulgur/strategies/options/process_group_backend.hpp>

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace c10d {
class Backend;
class Store;
class Work;
}  // namespace c10d

namespace fulgur {

/// Where and how the processes of one training run meet.
struct ProcessGroupOptions {
  int64_t rank = 0;
  int64_t world_size = 1;
  /// TCPStore rendezvous: rank 0 hosts it on main_port.
  std::string main_address = "127.0.0.1";
  int main_port = 29500;
  /// When set, rendezvous through a file on a shared filesystem instead.
  std::optional<std::string> file_store_path;
  /// The store already runs (torchrun's agent or fulgur's launcher hosts
  /// it): rank 0 connects to it instead of starting one, and each group
  /// takes a key space of its own under store_prefix (the n-th group a rank
  /// makes: store_prefix/group_n).
  bool store_hosted_externally = false;
  /// Namespace of this group's keys in the store. An agent's store outlives
  /// the workers it restarts, so each attempt needs keys of its own.
  std::string store_prefix = "fulgur";
  /// Every rank on this machine: the store listens on loopback only
  /// (c10d stores have no authentication).
  bool all_local = true;
  /// CPU tensors go through Gloo, CUDA tensors through NCCL (unless
  /// `backend` says otherwise).
  torch::DeviceType device_type = torch::kCPU;
  /// Auto: NCCL for CUDA tensors, else Gloo. Gloo also takes CUDA tensors.
  ProcessGroupBackend backend = ProcessGroupBackend::Auto;
  /// With backend Mpi: the program's communicator (its Fortran handle,
  /// MPI_Comm_c2f) instead of MPI_COMM_WORLD.
  std::optional<int64_t> mpi_communicator;
  /// Why no store can be made (the environment found no rendezvous): raised
  /// by a backend that needs one; MPI does not.
  std::optional<std::string> rendezvous_error;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

/// Collectives a ProcessGroup has issued, by kind (a barrier counts as the
/// all_reduce it is made of; point-to-point sends and receives are apart).
struct CollectiveCounts {
  int64_t all_reduce = 0;
  int64_t broadcast = 0;
  int64_t all_gather = 0;
  int64_t reduce_scatter = 0;
  int64_t send = 0;
  int64_t recv = 0;
  /// Collectives proper: what every rank joins.
  int64_t collectives() const { return all_reduce + broadcast + all_gather + reduce_scatter; }
};

class RingAllreduce;

/// The processes of a run as one group: c10d's Gloo backend for CPU tensors
/// or NCCL for CUDA tensors, over a TCPStore or FileStore. Collectives are
/// blocking unless named *_async; all ranks must issue them in the same order.
/// Every collective issued is counted (counts()): a diagnostic for what a
/// training step communicates, at the cost of one atomic increment.
///
/// A group leaves SIGPIPE as it finds it: its sockets are Gloo's and the
/// store's (no MSG_NOSIGNAL of ours to pass), and a group outlives its runs,
/// so the run that uses it ignores SIGPIPE (RunSettings: the Trainer, Fabric
/// and online trainer do). A program that drives a group itself holds
/// IgnoredSignal(SIGPIPE) around its use, or a peer's death kills it silently.
class ProcessGroup {
 public:
  /// `waits`: where its waits are marked (the strategy's; groups made from
  /// this one share it).
  explicit ProcessGroup(const ProcessGroupOptions& options,
                        std::shared_ptr<CollectiveWait> waits = std::make_shared<CollectiveWait>());
  /// A second, independent group of the same processes that meets through
  /// `parent`'s store under `name`: its collectives never pair with the
  /// parent's, so another thread can use it concurrently.
  ProcessGroup(const ProcessGroup& parent, const std::string& name);
  /// A group of some of `parent`'s processes (each member passes the same
  /// `name`, its `rank` in the group and the group's `size`): FSDP's
  /// HYBRID_SHARD groups within and across nodes.
  ProcessGroup(const ProcessGroup& parent, const std::string& name, int64_t rank, int64_t size);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int64_t rank() const { return options_.rank; }
  int64_t size() const { return options_.world_size; }
  const ProcessGroupOptions& options() const { return options_; }

  /// Starts an element-wise reduction of `tensor` in place (Mean divides the sum).
  c10::intrusive_ptr<c10d::Work> all_reduce_async(torch::Tensor& tensor, ReduceOp op);
  void all_reduce(torch::Tensor& tensor, ReduceOp op);
  /// The same reduction (Sum or Mean of a contiguous tensor) by fulgur's
  /// ring on the calling thread, counted as one all_reduce (its messages
  /// also count as sends and receives). On Gloo it is the faster way for
  /// small tensors: Gloo's own allreduce hands every message between
  /// threads, ~1.9 ms for 0.45 MB on a 2-core host's loopback where the ring
  /// takes ~0.7 (bench/RESULTS.md, ddp 2/1). Every rank must call it with
  /// the same length at the same point.
  void ring_all_reduce(torch::Tensor& tensor, ReduceOp op);
  void broadcast(torch::Tensor& tensor, int64_t source_rank);
  /// Every rank's `tensor` (same shape on all ranks), in rank order.
  std::vector<torch::Tensor> all_gather(const torch::Tensor& tensor);
  /// Starts gathering every rank's contiguous `input` into `output` (world
  /// size times its numel), rank after rank: one flat collective.
  c10::intrusive_ptr<c10d::Work> all_gather_into_async(torch::Tensor& output, torch::Tensor& input);
  /// Starts summing the ranks' contiguous `input` (world size times
  /// `output`'s numel) and leaves chunk `rank` of the sum in `output`.
  c10::intrusive_ptr<c10d::Work> reduce_scatter_async(torch::Tensor& output, torch::Tensor& input);
  void barrier();
  /// From any thread: aborts the backend, so collectives in flight fail
  /// (NCCL; Gloo's abort does nothing, its waits end when the peer does).
  void abort();
  /// Point-to-point: starts sending / receiving a contiguous `tensor` to /
  /// from `peer`. Sends and receives pair by (peer, tag).
  c10::intrusive_ptr<c10d::Work> send_async(torch::Tensor& tensor, int64_t peer, int tag);
  c10::intrusive_ptr<c10d::Work> recv_async(torch::Tensor& tensor, int64_t peer, int tag);

  /// Waits for `work`, turning a failure (a dead peer, a timeout) into an
  /// exception that names this rank and the operation.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* operation) const;

  /// Where this group and those made from it wait, from any thread.
  CollectiveWait& waits() const { return *waits_; }

  /// What this group has issued so far (all threads).
  CollectiveCounts counts() const;

 private:
  void create_backend(const c10::intrusive_ptr<c10d::Store>& store);

  ProcessGroupOptions options_;
  std::shared_ptr<CollectiveWait> waits_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  std::unique_ptr<RingAllreduce> ring_;  // made at the first ring_all_reduce
  std::atomic<int64_t> all_reduces_{0}, broadcasts_{0}, all_gathers_{0}, reduce_scatters_{0}, sends_{0}, recvs_{0};
};

/// Where the processes `env` describes meet (store address or file, rank,
/// world size), with collectives failing after `timeout_s` seconds.
ProcessGroupOptions process_group_options(const ClusterEnvironment& env, double timeout_s);

}  // namespace fulgur
