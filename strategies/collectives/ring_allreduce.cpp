#include <fulgur/strategies/collectives/ring_allreduce.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <vector>

namespace fulgur {
namespace {

int64_t positive_mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

}  // namespace

RingAllreduce::RingAllreduce(ProcessGroup& group, Options options) : group_(group), options_(options) {
  if (options_.segment_bytes < 1) {
    throw std::invalid_argument(
        fmt::format("[RingAllreduce::RingAllreduce] segment_bytes must be >= 1, got {}", options_.segment_bytes));
  }
  if (options_.segments_in_flight < 1) {
    throw std::invalid_argument(fmt::format("[RingAllreduce::RingAllreduce] segments_in_flight must be >= 1, got {}",
                                            options_.segments_in_flight));
  }
}

int64_t RingAllreduce::segment_elements(int64_t segment_bytes, int64_t element_size, int64_t longest_chunk,
                                        int64_t steps) {
  const int64_t wanted = std::max<int64_t>(1, segment_bytes / element_size);
  // Tags are step * segments_per_chunk + k; Gloo's tags are ints.
  const int64_t segments_allowed = std::numeric_limits<int>::max() / std::max<int64_t>(steps, 1);
  const int64_t smallest = (longest_chunk + segments_allowed - 1) / segments_allowed;
  return std::max(wanted, smallest);
}

void RingAllreduce::run(torch::Tensor& buffer, ReduceOp op, const PhaseObserver& observer) {
  if (op != ReduceOp::Sum && op != ReduceOp::Mean) {
    throw std::invalid_argument("[RingAllreduce::run] only Sum and Mean are ring reductions");
  }
  if (!buffer.is_contiguous()) throw std::invalid_argument("[RingAllreduce::run] the buffer must be contiguous");
  const int64_t n = group_.size();
  const int64_t rank = group_.rank();
  const int64_t length = buffer.numel();
  if (n == 1 || length == 0) return;

  torch::Tensor flat = buffer.view({-1});
  auto chunk_start = [&](int64_t c) { return c * length / n; };
  auto chunk_length = [&](int64_t c) { return chunk_start(c + 1) - chunk_start(c); };
  const int64_t steps = 2 * (n - 1);
  const int64_t segment =
      segment_elements(options_.segment_bytes, static_cast<int64_t>(buffer.element_size()), (length + n - 1) / n, steps);
  auto segments_of = [&](int64_t c) { return (chunk_length(c) + segment - 1) / segment; };
  int64_t max_segments = 0;
  for (int64_t c = 0; c < n; ++c) max_segments = std::max(max_segments, segments_of(c));
  const int64_t right = (rank + 1) % n;
  const int64_t left = positive_mod(rank - 1, n);

  // 2(n-1) steps: the first n-1 reduce (scatter), the rest copy (gather).
  // In step s this rank sends chunk (rank - s) and receives chunk (rank - s - 1).
  auto sent_chunk = [&](int64_t s) { return positive_mod(rank - s, n); };
  auto received_chunk = [&](int64_t s) { return positive_mod(rank - s - 1, n); };
  auto tag = [&](int64_t s, int64_t k) { return static_cast<int>(s * max_segments + k); };
  auto piece = [&](const torch::Tensor& t, int64_t c, int64_t k) {
    const int64_t offset = k * segment;
    return t.narrow(0, chunk_start(c) + offset, std::min(segment, chunk_length(c) - offset));
  };

  // Every receive this rank will see, in the order they complete: step by
  // step, segment by segment.
  struct Transfer {
    int64_t step;
    int64_t segment;
  };
  std::vector<Transfer> transfers;
  int64_t scatter_transfers = 0;
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t k = 0; k < segments_of(received_chunk(s)); ++k) transfers.push_back({s, k});
    if (s == n - 2) scatter_transfers = static_cast<int64_t>(transfers.size());
  }

  // Gloo's point-to-point protocol moves data only once the receiver has
  // announced its buffer to the sender; a send issued before that waits in
  // the sender's queue and is later written by Gloo's single event-loop
  // thread, which then also does every read. So receives are posted ahead:
  // reduce-scatter segments land in a small ring of scratch slots, one slot
  // re-posted as soon as its segment has been added, and all-gather segments
  // land in their final place, so all of them are posted at the start. The
  // sender then finds the receive announced and writes the data from its own
  // thread, and the two copies of every byte (into and out of the socket)
  // run on two threads instead of one.
  const int64_t slots = std::min<int64_t>(options_.segments_in_flight, std::max<int64_t>(scatter_transfers, 1));
  const int64_t slot_length = std::min(segment, length / n + 1);
  if (!scratch_.defined() || scratch_.numel() < slots * slot_length || scratch_.dtype() != buffer.dtype() ||
      scratch_.device() != buffer.device()) {
    scratch_ = torch::empty({slots * slot_length}, buffer.options());
  }
  std::vector<torch::Tensor> targets(transfers.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> recvs(transfers.size());
  auto post_recv = [&](int64_t i) {
    const auto [s, k] = transfers[static_cast<size_t>(i)];
    const int64_t c = received_chunk(s);
    if (i < scatter_transfers) {
      targets[static_cast<size_t>(i)] =
          scratch_.narrow(0, (i % slots) * slot_length, std::min(segment, chunk_length(c) - k * segment));
    } else {
      targets[static_cast<size_t>(i)] = piece(flat, c, k);
    }
    recvs[static_cast<size_t>(i)] = group_.recv_async(targets[static_cast<size_t>(i)], left, tag(s, k));
  };
  std::vector<c10::intrusive_ptr<c10d::Work>> sends;
  auto send = [&](int64_t s, int64_t k) {
    torch::Tensor t = piece(flat, sent_chunk(s), k);
    sends.push_back(group_.send_async(t, right, tag(s, k)));
  };

  Clock::time_point phase_start = Clock::now();
  if (scatter_transfers == 0 && observer) observer("reduce_scatter", phase_start, phase_start);
  for (int64_t i = 0; i < std::min(slots, scatter_transfers); ++i) post_recv(i);
  for (int64_t i = scatter_transfers; i < static_cast<int64_t>(transfers.size()); ++i) post_recv(i);
  for (int64_t k = 0; k < segments_of(sent_chunk(0)); ++k) send(0, k);
  for (int64_t i = 0; i < static_cast<int64_t>(transfers.size()); ++i) {
    const auto [s, k] = transfers[static_cast<size_t>(i)];
    group_.wait(recvs[static_cast<size_t>(i)], "ring_allreduce");
    recvs[static_cast<size_t>(i)].reset();
    if (i < scatter_transfers) {
      torch::Tensor mine = piece(flat, received_chunk(s), k);
      mine.add_(targets[static_cast<size_t>(i)]);
      // After the last reduce step this chunk is complete: average it once here.
      if (s == n - 2 && op == ReduceOp::Mean) mine.div_(static_cast<double>(n));
      // The slot is free again: announce the next scatter receive into it.
      if (i + slots < scatter_transfers) post_recv(i + slots);
    }
    targets[static_cast<size_t>(i)] = torch::Tensor();
    // What arrived in step s is what leaves in step s + 1 (sent_chunk(s+1) == received_chunk(s)).
    if (s + 1 < steps) send(s + 1, k);
    if (i + 1 == scatter_transfers) {
      const Clock::time_point now = Clock::now();
      if (observer) observer("reduce_scatter", phase_start, now);
      phase_start = now;
    }
  }
  for (auto& work : sends) group_.wait(work, "ring_allreduce");
  if (observer) observer("all_gather", phase_start, Clock::now());
}

}  // namespace fulgur
