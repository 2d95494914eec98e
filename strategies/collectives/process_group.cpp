#include <fulgur/strategies/collectives/process_group.hpp>

#include <fulgur/strategies/cuda/nccl_backend.hpp>
#include <fulgur/strategies/mpi/mpi_runtime.hpp>
#include <fulgur/strategies/collectives/ring_allreduce.hpp>
#include <fulgur/strategies/collectives/torch_compat.hpp>
#include <fulgur/strategies/launchers/network.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>

namespace fulgur {
namespace {

c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: return c10d::ReduceOp::SUM;
    case ReduceOp::Max: return c10d::ReduceOp::MAX;
    case ReduceOp::Min: return c10d::ReduceOp::MIN;
  }
  return c10d::ReduceOp::SUM;
}

c10::intrusive_ptr<c10d::Store> make_store(const ProcessGroupOptions& o) {
  if (o.file_store_path) {
    return c10::make_intrusive<c10d::FileStore>(*o.file_store_path, static_cast<int>(o.world_size));
  }
  c10d::TCPStoreOptions t;
  t.port = static_cast<uint16_t>(o.main_port);
  t.isServer = o.rank == 0 && !o.store_hosted_externally;
  t.numWorkers = static_cast<size_t>(o.world_size);
  t.waitWorkers = true;
  t.timeout = o.timeout;
  if (t.isServer && o.all_local) {
    t.masterListenFd = listen_on_loopback(o.main_port, "[ProcessGroup::ProcessGroup]");
    t.useLibUV = false;  // the classic server accepts a pre-bound socket everywhere
    // Port 0 (a single process picking any free port) binds an ephemeral
    // port; the store checks the socket against the port it is given.
    if (const int port = bound_port(*t.masterListenFd); port > 0) t.port = static_cast<uint16_t>(port);
  }
  return c10::make_intrusive<c10d::TCPStore>(o.all_local ? "127.0.0.1" : o.main_address, t);
}

}  // namespace

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options, std::shared_ptr<CollectiveWait> waits)
    : options_(options), waits_(std::move(waits)) {
  if (options_.backend == ProcessGroupBackend::Mpi) {
    // MPI's launcher (or the program's communicator) already connected the
    // ranks; the module checks MPI's numbering against the options.
    backend_ = MpiRuntime::group(options_.mpi_communicator, static_cast<int>(options_.rank),
                                 static_cast<int>(options_.world_size));
    return;
  }
  if (options_.world_size < 1 || options_.rank < 0 || options_.rank >= options_.world_size) {
    throw std::invalid_argument(fmt::format("[ProcessGroup::ProcessGroup] rank {} is outside world size {}",
                                            options_.rank, options_.world_size));
  }
  if (options_.rendezvous_error) throw std::invalid_argument(*options_.rendezvous_error);
  try {
    const c10::intrusive_ptr<c10d::Store> store = make_store(options_);
    std::string prefix = options_.store_prefix;
    if (options_.store_hosted_externally) {
      // A launcher's store outlives the groups of its ranks (a program's
      // second Trainer, a probe's next run): the n-th group a rank makes
      // takes the n-th key space, the same on every rank, and never meets
      // the keys of the group before it.
      const int64_t n = store->add(fmt::format("{}/groups_of_rank_{}", prefix, options_.rank), 1);
      prefix = fmt::format("{}/group_{}", prefix, n);
    }
    store_ = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
    create_backend(store_);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("[ProcessGroup::ProcessGroup] rank {} of {} could not join the group at {}: {}",
                                         options_.rank, options_.world_size,
                                         options_.file_store_path ? *options_.file_store_path
                                                                  : fmt::format("{}:{}", options_.main_address,
                                                                                options_.main_port),
                                         e.what_without_backtrace()));
  }
}

void ProcessGroup::create_backend(const c10::intrusive_ptr<c10d::Store>& store) {
  const int rank = static_cast<int>(options_.rank);
  const int size = static_cast<int>(options_.world_size);
  const bool nccl = options_.backend == ProcessGroupBackend::Nccl ||
                    (options_.backend == ProcessGroupBackend::Auto && options_.device_type == torch::kCUDA);
  if (nccl) {
    backend_ = make_nccl_backend(store, rank, size, options_.timeout);
  } else {
    auto gloo = c10d::ProcessGroupGloo::Options::create();
    gloo->timeout = options_.timeout;
    // GLOO_SOCKET_IFNAME picks the network interface, as in PyTorch; a
    // single machine talks over loopback; otherwise the hostname's address.
    const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
    if (interface != nullptr && *interface != '\0') {
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(interface));
    } else if (options_.all_local) {
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    backend_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo);
  }
}

ProcessGroup::ProcessGroup(const ProcessGroup& parent, const std::string& name)
    : ProcessGroup(parent, name, parent.rank(), parent.size()) {}

ProcessGroup::ProcessGroup(const ProcessGroup& parent, const std::string& name, int64_t rank, int64_t size)
    : options_(parent.options_), waits_(parent.waits_) {
  options_.rank = rank;
  options_.world_size = size;
  if (options_.backend == ProcessGroupBackend::Mpi) {
    backend_ = MpiRuntime::split(parent.backend_, name, static_cast<int>(rank), static_cast<int>(size));
    return;
  }
  try {
    store_ = c10::make_intrusive<c10d::PrefixStore>(name, parent.store_);
    create_backend(store_);
  } catch (const c10::Error& e) {
    throw std::runtime_error(fmt::format("[ProcessGroup::ProcessGroup] rank {} of {} could not create group '{}': {}",
                                         options_.rank, options_.world_size, name, e.what_without_backtrace()));
  }
}

ProcessGroup::~ProcessGroup() {
  // Tell the backend how the group ends, as torch.distributed's
  // destroy_process_group does: NCCL's destructor otherwise warns that the
  // group was not destroyed and may leave communicators to the exit path.
  // Unwinding from an error aborts instead: a dead peer must not hold us.
  if (!backend_) return;
  try {
    if (std::uncaught_exceptions() > 0) {
      backend_->abort();
    } else {
      backend_->shutdown();
    }
  } catch (const std::exception& e) {
    std::cerr << "fulgur: warning: closing the process group failed: " << e.what() << std::endl;
  }
}

void ProcessGroup::abort() {
  if (!backend_) return;
  try {
    backend_->abort();
  } catch (const std::exception& e) {
    std::cerr << "fulgur: warning: aborting the process group failed: " << e.what() << std::endl;
  }
}

void ProcessGroup::wait(const c10::intrusive_ptr<c10d::Work>& work, const char* operation) const {
  try {
    const CollectiveWait::Scope waiting(*waits_, operation);
    work->wait();
  } catch (const std::exception& e) {
    const std::string what = dynamic_cast<const c10::Error*>(&e) != nullptr
                                  ? static_cast<const c10::Error&>(e).what_without_backtrace()
                                  : e.what();
    throw std::runtime_error(fmt::format("[ProcessGroup::{}] rank {} of {}: a peer failed or timed out: {}",
                                         operation, options_.rank, options_.world_size, what));
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::all_reduce_async(torch::Tensor& tensor, ReduceOp op) {
  if (op == ReduceOp::Mean) tensor.div_(static_cast<double>(options_.world_size));
  all_reduces_.fetch_add(1, std::memory_order_relaxed);
  std::vector<torch::Tensor> tensors{tensor};
  c10d::AllreduceOptions o;
  o.reduceOp = to_c10d(op);
  return backend_->allreduce(tensors, o);
}

void ProcessGroup::all_reduce(torch::Tensor& tensor, ReduceOp op) { wait(all_reduce_async(tensor, op), "all_reduce"); }

void ProcessGroup::ring_all_reduce(torch::Tensor& tensor, ReduceOp op) {
  all_reduces_.fetch_add(1, std::memory_order_relaxed);
  if (!ring_) ring_ = std::make_unique<RingAllreduce>(*this);
  ring_->run(tensor, op);  // its waits mark themselves (ProcessGroup::wait)
}

void ProcessGroup::broadcast(torch::Tensor& tensor, int64_t source_rank) {
  broadcasts_.fetch_add(1, std::memory_order_relaxed);
  std::vector<torch::Tensor> tensors{tensor};
  c10d::BroadcastOptions o;
  o.rootRank = source_rank;
  wait(backend_->broadcast(tensors, o), "broadcast");
}

std::vector<torch::Tensor> ProcessGroup::all_gather(const torch::Tensor& tensor) {
  all_gathers_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::vector<torch::Tensor>> outputs(1);
  for (int64_t r = 0; r < options_.world_size; ++r) outputs[0].push_back(torch::empty_like(tensor));
  std::vector<torch::Tensor> inputs{tensor.contiguous()};
  wait(backend_->allgather(outputs, inputs), "all_gather");
  return outputs[0];
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::all_gather_into_async(torch::Tensor& output, torch::Tensor& input) {
  all_gathers_.fetch_add(1, std::memory_order_relaxed);
  return torch_compat::all_gather_single(*backend_, output, input);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::reduce_scatter_async(torch::Tensor& output, torch::Tensor& input) {
  // Gloo and NCCL both implement the flat form.
  reduce_scatters_.fetch_add(1, std::memory_order_relaxed);
  c10d::ReduceScatterOptions o;
  o.reduceOp = c10d::ReduceOp::SUM;
  return torch_compat::reduce_scatter_single(*backend_, output, input, o);
}

void ProcessGroup::barrier() {
  // A tiny allreduce is a barrier every backend implements the same way.
  torch::Tensor token = torch::zeros({1}, torch::TensorOptions().device(options_.device_type));
  all_reduce(token, ReduceOp::Sum);
}

}  // namespace fulgur

namespace fulgur {

c10::intrusive_ptr<c10d::Work> ProcessGroup::send_async(torch::Tensor& tensor, int64_t peer, int tag) {
  sends_.fetch_add(1, std::memory_order_relaxed);
  std::vector<torch::Tensor> tensors{tensor};
  return backend_->send(tensors, static_cast<int>(peer), tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroup::recv_async(torch::Tensor& tensor, int64_t peer, int tag) {
  recvs_.fetch_add(1, std::memory_order_relaxed);
  std::vector<torch::Tensor> tensors{tensor};
  return backend_->recv(tensors, static_cast<int>(peer), tag);
}

CollectiveCounts ProcessGroup::counts() const {
  CollectiveCounts c;
  c.all_reduce = all_reduces_.load(std::memory_order_relaxed);
  c.broadcast = broadcasts_.load(std::memory_order_relaxed);
  c.all_gather = all_gathers_.load(std::memory_order_relaxed);
  c.reduce_scatter = reduce_scatters_.load(std::memory_order_relaxed);
  c.send = sends_.load(std::memory_order_relaxed);
  c.recv = recvs_.load(std::memory_order_relaxed);
  return c;
}

ProcessGroupOptions process_group_options(const ClusterEnvironment& env, double timeout_s) {
  ProcessGroupOptions options;
  options.rank = env.global_rank();
  options.world_size = env.world_size();
  options.main_address = env.main_address();
  options.main_port = env.main_port();
  options.file_store_path = env.file_store_path();
  options.rendezvous_error = env.rendezvous_error();
  options.mpi_communicator = env.mpi_communicator();
  options.all_local = env.num_nodes() == 1;
  if (const auto& prefix = env.hosted_store_prefix()) {
    options.store_hosted_externally = true;
    options.store_prefix = *prefix;
  }
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
  return options;
}

}  // namespace fulgur
