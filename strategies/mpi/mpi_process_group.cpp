#include <fulgur/strategies/mpi/mpi_process_group.hpp>
#include <fulgur/strategies/mpi/mpi_ring_allreduce.hpp>
#include <fulgur/strategies/mpi/mpi_ring_reduce_scatter.hpp>
#include <fulgur/strategies/mpi/mpi_work.hpp>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <climits>
#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(std::string("[MpiProcessGroup] ") + call + " failed: " + std::string(text, length));
}

bool cuda_aware() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  static const bool aware = MPIX_Query_cuda_support() == 1;
  return aware;
#else
  return false;
#endif
}

int count_of(int64_t n, const char* what) {
  if (n > INT_MAX) {
    throw std::invalid_argument(std::string("[MpiProcessGroup] ") + what + " of " + std::to_string(n) +
                                " elements is beyond MPI's int count; split the tensor");
  }
  return static_cast<int>(n);
}

/// The datatype MPI reduces `type` as; half-precision types are reduced as
/// float (MPI has none of its own).
MPI_Datatype reduce_type(at::ScalarType type) {
  switch (type) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kShort: return MPI_INT16_T;
    case at::kChar: return MPI_INT8_T;
    case at::kByte:
    case at::kBool: return MPI_UINT8_T;
    default: throw std::invalid_argument(std::string("[MpiProcessGroup] cannot reduce tensors of ") + c10::toString(type));
  }
}

MPI_Op reduce_op(const c10d::ReduceOp& op) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM: return MPI_SUM;
    case c10d::ReduceOp::PRODUCT: return MPI_PROD;
    case c10d::ReduceOp::MIN: return MPI_MIN;
    case c10d::ReduceOp::MAX: return MPI_MAX;
    default: throw std::invalid_argument("[MpiProcessGroup] only SUM, PRODUCT, MIN and MAX reduce over MPI");
  }
}

bool reduced_as_float(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

/// Memory MPI may read and write for `t`: `t` itself when it is contiguous
/// and on the CPU (or on a GPU with a CUDA-aware MPI); otherwise a
/// contiguous host copy (pinned for a CUDA tensor), which put_back copies
/// into `t` after a receiving operation.
at::Tensor reachable(const at::Tensor& t) {
  if (t.is_cuda() && !cuda_aware()) {
    return at::empty(t.sizes(), t.options().device(at::kCPU).pinned_memory(true)).copy_(t);
  }
  return t.contiguous();
}

void put_back(at::Tensor& t, const at::Tensor& buffer) {
  if (!buffer.is_same(t)) t.copy_(buffer);
}

/// The caller's streams have finished writing the tensors before MPI (on
/// the engine thread, or on the GPU directly) reads them.
void synchronise(const std::vector<at::Tensor>& tensors) {
  for (const auto& t : tensors) {
    if (!t.is_cuda()) continue;
    const auto* impl = c10::impl::getDeviceGuardImpl(at::kCUDA);
    impl->synchronizeStream(impl->getStream(t.device()));
  }
}

/// Polls `request`; once it is complete runs `then` (copies results back).
MpiEngine::Poll once_complete(MPI_Request request, std::function<void()> then) {
  auto state = std::make_shared<std::pair<MPI_Request, std::function<void()>>>(request, std::move(then));
  return [state] {
    int complete = 0;
    check(MPI_Test(&state->first, &complete, MPI_STATUS_IGNORE), "MPI_Test");
    if (complete == 0) return false;
    if (state->second) state->second();
    return true;
  };
}

}  // namespace

c10::intrusive_ptr<MpiProcessGroup> MpiProcessGroup::create(MPI_Comm comm, int expected_rank, int expected_size) {
  if (comm == MPI_COMM_NULL) {
    throw std::invalid_argument("[MpiProcessGroup] the communicator is MPI_COMM_NULL: only the ranks of a "
                                "communicator train (a rank outside it trains nothing)");
  }
  auto session = MpiSession::acquire();
  MPI_Comm own = MPI_COMM_NULL;
  int rank = 0, size = 0;
  {
    const std::lock_guard calls(session->calls());
    check(MPI_Comm_dup(comm, &own), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(own, MPI_ERRORS_RETURN);
    MPI_Comm_rank(own, &rank);
    MPI_Comm_size(own, &size);
    if (expected_size > 0 && (rank != expected_rank || size != expected_size)) MPI_Comm_free(&own);
  }
  if (expected_size > 0 && (rank != expected_rank || size != expected_size)) {
    throw std::invalid_argument(
        "[MpiProcessGroup] process_group_backend 'mpi': MPI numbers this process rank " + std::to_string(rank) +
        " of " + std::to_string(size) + " but the run expects rank " + std::to_string(expected_rank) + " of " +
        std::to_string(expected_size) +
        ": start every rank with the MPI launcher (mpirun -np N, mpiexec, srun --mpi=pmix), or give a "
        "communicator with as many ranks as the run has");
  }
  return c10::make_intrusive<MpiProcessGroup>(own, rank, size, std::move(session));
}

MpiProcessGroup::MpiProcessGroup(MPI_Comm comm, int rank, int size, std::shared_ptr<MpiSession> session)
    : c10d::Backend(rank, size), comm_(comm), engine_(std::make_shared<MpiEngine>(std::move(session))) {
  engine_->run([this] {
    check(MPI_Comm_dup(comm_, &ring_comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(ring_comm_, MPI_ERRORS_RETURN);
    // MPI_TAG_UB is an attribute of MPI_COMM_WORLD only: a communicator the
    // program split off has none, and reading it there gave 32767.
    int* upper = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
    ring_tag_span_ = found != 0 && upper != nullptr ? *upper : 32767;
  });
}

MpiProcessGroup::~MpiProcessGroup() {
  try {
    shutdown();
  } catch (...) {  // a destructor reports nothing; shutdown() is the place to learn of a failure
  }
}

c10::intrusive_ptr<MpiProcessGroup> MpiProcessGroup::split(const std::string& name, int rank, int size) {
  MPI_Comm sub = MPI_COMM_NULL;
  int got_rank = 0, got_size = 0;
  engine_->run([&] {
    // Ranks that give the same name form one group: its colour is the lowest
    // rank of this group that gave it.
    const int length = static_cast<int>(name.size());
    std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    check(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<size_t>(r)] = total;
      total += lengths[static_cast<size_t>(r)];
    }
    std::string names(static_cast<size_t>(total), '\0');
    check(MPI_Allgatherv(name.data(), length, MPI_CHAR, names.data(), lengths.data(), offsets.data(), MPI_CHAR, comm_),
          "MPI_Allgatherv");
    int colour = 0;
    while (names.compare(static_cast<size_t>(offsets[static_cast<size_t>(colour)]),
                         static_cast<size_t>(lengths[static_cast<size_t>(colour)]), name) != 0) {
      ++colour;
    }
    check(MPI_Comm_split(comm_, colour, rank, &sub), "MPI_Comm_split");
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    MPI_Comm_rank(sub, &got_rank);
    MPI_Comm_size(sub, &got_size);
  });
  if (got_rank != rank || got_size != size) {
    throw std::invalid_argument("[MpiProcessGroup::split] group '" + name + "': MPI numbers this rank " +
                                std::to_string(got_rank) + " of " + std::to_string(got_size) + ", the caller asked for " +
                                std::to_string(rank) + " of " + std::to_string(size));
  }
  return c10::make_intrusive<MpiProcessGroup>(sub, rank, size, engine_->shared_session());
}

void MpiProcessGroup::abort() { engine_->abort(); }

void MpiProcessGroup::shutdown() {
  if (comm_ == MPI_COMM_NULL) return;
  MPI_Comm comm = comm_, ring = ring_comm_;
  comm_ = ring_comm_ = MPI_COMM_NULL;
  const bool aborted = engine_->aborted();
  if (!aborted) {
    engine_->run([comm, ring]() mutable {
      MPI_Comm_free(&comm);
      if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    });
  }
  // An aborted group's communicators stay: MPI may still use them.
  engine_->stop();
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::enqueue(c10d::OpType type, const std::vector<at::Tensor>& tensors,
                                                        std::function<MpiEngine::Poll()> begin) {
  if (comm_ == MPI_COMM_NULL) throw std::logic_error("[MpiProcessGroup] the group was shut down");
  synchronise(tensors);
  auto work = c10::make_intrusive<MpiWork>(rank_, type, tensors, engine_);
  engine_->start(
      [begin = std::move(begin), work]() -> MpiEngine::Poll {
        return [poll = begin(), work] {
          if (!poll()) return false;
          work->done(nullptr);
          return true;
        };
      },
      [work](std::exception_ptr error) { work->done(std::move(error)); });
  return work;
}

namespace {

void expect_one(const std::vector<at::Tensor>& tensors, const char* operation) {
  if (tensors.size() != 1) {
    throw std::invalid_argument(std::string("[MpiProcessGroup::") + operation + "] takes one tensor, got " +
                                std::to_string(tensors.size()));
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  expect_one(tensors, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  const int bytes = count_of(static_cast<int64_t>(tensors[0].nbytes()), "a broadcast");
  return enqueue(c10d::OpType::BROADCAST, tensors, [t = tensors[0], root, bytes, comm = comm_]() mutable {
    at::Tensor buffer = reachable(t);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibcast(buffer.data_ptr(), bytes, MPI_BYTE, root, comm, &request), "MPI_Ibcast");
    return once_complete(request, [t, buffer]() mutable { put_back(t, buffer); });
  });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  expect_one(tensors, "allreduce");
  const MPI_Op op = reduce_op(opts.reduceOp);
  const MPI_Datatype type = reduce_type(reduced_as_float(tensors[0]) ? at::kFloat : tensors[0].scalar_type());
  const int count = count_of(tensors[0].numel(), "an all-reduce");
  if (size_ > 1 && static_cast<int64_t>(tensors[0].nbytes()) >= kRingBytes) {
    return enqueue(c10d::OpType::ALLREDUCE, tensors, [this, t = tensors[0], reduce = opts.reduceOp]() mutable {
      at::Tensor buffer = reachable(t);
      at::Tensor reduced = reduced_as_float(buffer) ? buffer.to(at::kFloat) : buffer;
      const int tag_base = ring_tag_base(
          MpiRingAllreduce::tags(reduced.numel(), size_, reduced.element_size(), kRingSegmentBytes));
      auto ring = std::make_shared<MpiRingAllreduce>(reduced, reduce, ring_comm_, tag_base, kRingSegmentBytes,
                                                     engine_->reducer(), take_ring_scratch());
      return MpiEngine::Poll([this, ring, t, buffer, reduced]() mutable {
        if (!ring->poll()) return false;
        give_ring_scratch(ring->scratch());
        if (!reduced.is_same(buffer)) buffer.copy_(reduced);
        put_back(t, buffer);
        return true;
      });
    });
  }
  return enqueue(c10d::OpType::ALLREDUCE, tensors, [t = tensors[0], op, type, count, comm = comm_]() mutable {
    at::Tensor buffer = reachable(t);
    at::Tensor reduced = reduced_as_float(buffer) ? buffer.to(at::kFloat) : buffer;
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, reduced.data_ptr(), count, type, op, comm, &request), "MPI_Iallreduce");
    return once_complete(request, [t, buffer, reduced]() mutable {
                     if (!reduced.is_same(buffer)) buffer.copy_(reduced);
                     put_back(t, buffer);
                   });
  });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllgatherOptions&) {
  if (inputs.size() != 1 || outputs.size() != 1 || outputs[0].size() != static_cast<size_t>(size_)) {
    throw std::invalid_argument("[MpiProcessGroup::allgather] takes one input and one output per rank");
  }
  std::vector<at::Tensor> all = inputs;
  all.insert(all.end(), outputs[0].begin(), outputs[0].end());
  const int bytes = count_of(static_cast<int64_t>(inputs[0].nbytes()), "an all-gather");
  return enqueue(c10d::OpType::ALLGATHER, all, [input = inputs[0], outs = outputs[0], size = size_, bytes,
                                                comm = comm_]() mutable {
    at::Tensor in = reachable(input);
    at::Tensor flat = at::empty({static_cast<int64_t>(size) * in.numel()}, in.options());
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Iallgather(in.data_ptr(), bytes, MPI_BYTE, flat.data_ptr(), bytes, MPI_BYTE, comm, &request),
          "MPI_Iallgather");
    return once_complete(request, [in, flat, outs, size]() mutable {
                     for (int r = 0; r < size; ++r) {
                       outs[static_cast<size_t>(r)].copy_(flat.narrow(0, r * in.numel(), in.numel()).view(in.sizes()));
                     }
                   });
  });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                const c10d::AllgatherOptions&) {
  if (output.numel() != input.numel() * size_) {
    throw std::invalid_argument("[MpiProcessGroup::_allgather_base] the output must hold every rank's input");
  }
  const int bytes = count_of(static_cast<int64_t>(input.nbytes()), "an all-gather");
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {output, input},
                 [output, input, bytes, comm = comm_]() mutable {
                   at::Tensor in = reachable(input);
                   at::Tensor out = reachable(output);
                   MPI_Request request = MPI_REQUEST_NULL;
                   check(MPI_Iallgather(in.data_ptr(), bytes, MPI_BYTE, out.data_ptr(), bytes, MPI_BYTE, comm,
                                        &request),
                         "MPI_Iallgather");
                   return once_complete(request, [output, out, in]() mutable { put_back(output, out); });
                 });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::ReduceScatterOptions& opts) {
  if (input.numel() != output.numel() * size_) {
    throw std::invalid_argument("[MpiProcessGroup::_reduce_scatter_base] the input must hold one output per rank");
  }
  const MPI_Op op = reduce_op(opts.reduceOp);
  const MPI_Datatype type = reduce_type(reduced_as_float(input) ? at::kFloat : input.scalar_type());
  const int count = count_of(output.numel(), "a reduce-scatter");
  if (size_ > 1 && static_cast<int64_t>(input.nbytes()) >= kRingBytes) {
    return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output, input},
                   [this, output, input, reduce = opts.reduceOp]() mutable {
                     at::Tensor in = reachable(input);
                     if (reduced_as_float(in)) in = in.to(at::kFloat);
                     at::Tensor out = reachable(output);
                     at::Tensor reduced =
                         reduced_as_float(out) ? at::empty(out.sizes(), out.options().dtype(at::kFloat)) : out;
                     const int tag_base = ring_tag_base(MpiRingReduceScatter::tags(
                         reduced.numel(), size_, reduced.element_size(), kRingSegmentBytes));
                     auto ring = std::make_shared<MpiRingReduceScatter>(reduced, in, reduce, ring_comm_, tag_base,
                                                                        kRingSegmentBytes, engine_->reducer(),
                                                                        take_ring_scratch());
                     return MpiEngine::Poll([this, ring, output, out, reduced, in]() mutable {
                       if (!ring->poll()) return false;
                       give_ring_scratch(ring->scratch());
                       if (!reduced.is_same(out)) out.copy_(reduced);
                       put_back(output, out);
                       return true;
                     });
                   });
  }
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, {output, input},
                 [output, input, op, type, count, comm = comm_]() mutable {
                   at::Tensor in = reachable(input);
                   if (reduced_as_float(in)) in = in.to(at::kFloat);
                   at::Tensor out = reachable(output);
                   at::Tensor reduced =
                       reduced_as_float(out) ? at::empty(out.sizes(), out.options().dtype(at::kFloat)) : out;
                   MPI_Request request = MPI_REQUEST_NULL;
                   check(MPI_Ireduce_scatter_block(in.data_ptr(), reduced.data_ptr(), count, type, op, comm,
                                                   &request),
                         "MPI_Ireduce_scatter_block");
                   return once_complete(request, [output, out, reduced, in]() mutable {
                                    if (!reduced.is_same(out)) out.copy_(reduced);
                                    put_back(output, out);
                                  });
                 });
}

// Rings take consecutive ranges of the tag space, wrapping at its end, so
// rings in flight at once never share a tag (a shared one let segments of
// two reduce-scatters meet each other's receives, with equal sizes and wrong
// values, whenever the ranks posted them in different orders). Every rank
// starts the same rings in the same order, so the ranges agree.
int MpiProcessGroup::ring_tag_base(int64_t tags) {
  if (tags > ring_tag_span_) {
    throw std::invalid_argument("[MpiProcessGroup] a ring of " + std::to_string(tags) + " messages needs more tags than "
                                "MPI_TAG_UB allows (" + std::to_string(ring_tag_span_) + ")");
  }
  if (next_ring_tag_ + tags > ring_tag_span_) next_ring_tag_ = 0;
  const auto base = static_cast<int>(next_ring_tag_);
  next_ring_tag_ += tags;
  return base;
}

at::Tensor MpiProcessGroup::take_ring_scratch() {
  if (ring_scratch_.empty()) return {};
  at::Tensor spare = std::move(ring_scratch_.back());
  ring_scratch_.pop_back();
  return spare;
}

void MpiProcessGroup::give_ring_scratch(const at::Tensor& scratch) {
  if (scratch.defined()) ring_scratch_.push_back(scratch);
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, {}, [comm = comm_] {
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
    return once_complete(request, {});
  });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  expect_one(tensors, "send");
  const int bytes = count_of(static_cast<int64_t>(tensors[0].nbytes()), "a send");
  return enqueue(c10d::OpType::SEND, tensors, [t = tensors[0], bytes, dst, tag, comm = comm_] {
    at::Tensor buffer = reachable(t);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Isend(buffer.data_ptr(), bytes, MPI_BYTE, dst, tag, comm, &request), "MPI_Isend");
    return once_complete(request, [buffer] {});  // keeps the staged copy until MPI is done with it
  });
}

c10::intrusive_ptr<c10d::Work> MpiProcessGroup::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  expect_one(tensors, "recv");
  const int bytes = count_of(static_cast<int64_t>(tensors[0].nbytes()), "a receive");
  return enqueue(c10d::OpType::RECV, tensors, [t = tensors[0], bytes, src, tag, comm = comm_]() mutable {
    at::Tensor buffer = reachable(t);
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Irecv(buffer.data_ptr(), bytes, MPI_BYTE, src, tag, comm, &request), "MPI_Irecv");
    return once_complete(request, [t, buffer]() mutable { put_back(t, buffer); });
  });
}

}  // namespace fulgur
