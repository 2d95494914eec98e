#include <fulgur/strategies/ring_allreduce.hpp>

#include <fulgur/strategies/process_group.hpp>

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <algorithm>
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
  const int64_t segment = std::max<int64_t>(1, options_.segment_bytes / static_cast<int64_t>(buffer.element_size()));
  auto segments_of = [&](int64_t c) { return (chunk_length(c) + segment - 1) / segment; };
  int64_t max_segments = 0;
  for (int64_t c = 0; c < n; ++c) max_segments = std::max(max_segments, segments_of(c));
  const int64_t right = (rank + 1) % n;
  const int64_t left = positive_mod(rank - 1, n);

  // 2(n-1) steps: the first n-1 reduce (scatter), the rest copy (gather).
  // In step s this rank sends chunk (rank - s) and receives chunk (rank - s - 1).
  const int64_t steps = 2 * (n - 1);
  auto sent_chunk = [&](int64_t s) { return positive_mod(rank - s, n); };
  auto received_chunk = [&](int64_t s) { return positive_mod(rank - s - 1, n); };
  auto tag = [&](int64_t s, int64_t k) { return static_cast<int>(s * max_segments + k); };
  auto piece = [&](const torch::Tensor& t, int64_t c, int64_t k) {
    const int64_t offset = k * segment;
    return t.narrow(0, chunk_start(c) + offset, std::min(segment, chunk_length(c) - offset));
  };

  const torch::Tensor scratch = torch::empty({length / n + 1}, buffer.options());
  auto scratch_piece = [&](int64_t c, int64_t k) {
    const int64_t offset = k * segment;
    return scratch.narrow(0, offset, std::min(segment, chunk_length(c) - offset));
  };
  std::vector<c10::intrusive_ptr<c10d::Work>> sends;
  auto send = [&](int64_t s, int64_t k) {
    torch::Tensor t = piece(flat, sent_chunk(s), k);
    sends.push_back(group_.send_async(t, right, tag(s, k)));
  };

  Clock::time_point phase_start = Clock::now();
  for (int64_t k = 0; k < segments_of(sent_chunk(0)); ++k) send(0, k);
  for (int64_t s = 0; s < steps; ++s) {
    const bool reducing = s < n - 1;
    const int64_t c = received_chunk(s);
    std::vector<torch::Tensor> targets;
    std::vector<c10::intrusive_ptr<c10d::Work>> recvs;
    for (int64_t k = 0; k < segments_of(c); ++k) {
      targets.push_back(reducing ? scratch_piece(c, k) : piece(flat, c, k));
      recvs.push_back(group_.recv_async(targets.back(), left, tag(s, k)));
    }
    for (int64_t k = 0; k < segments_of(c); ++k) {
      group_.wait(recvs[static_cast<size_t>(k)], "ring_allreduce");
      if (reducing) {
        torch::Tensor mine = piece(flat, c, k);
        mine.add_(targets[static_cast<size_t>(k)]);
        // After the last reduce step this chunk is complete: average it once here.
        if (s == n - 2 && op == ReduceOp::Mean) mine.div_(static_cast<double>(n));
      }
      // What arrived in step s is what leaves in step s + 1 (sent_chunk(s+1) == c).
      if (s + 1 < steps) send(s + 1, k);
    }
    if (s == n - 2) {
      const Clock::time_point now = Clock::now();
      if (observer) observer("reduce_scatter", phase_start, now);
      phase_start = now;
    }
  }
  for (auto& work : sends) group_.wait(work, "ring_allreduce");
  if (observer) observer("all_gather", phase_start, Clock::now());
}

}  // namespace fulgur
