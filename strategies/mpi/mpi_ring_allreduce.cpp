#include <fulgur/strategies/mpi/mpi_ring_allreduce.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

MpiRingAllreduce::MpiRingAllreduce(at::Tensor tensor, c10d::ReduceOp op, MPI_Comm comm, int tag_base,
                                   int64_t segment_bytes, MpiReducer& reducer, at::Tensor spare)
    : tensor_(tensor.view(-1)), op_(op), reducer_(reducer), comm_(comm), tag_base_(tag_base) {
  if (op_.op_ != c10d::ReduceOp::SUM && op_.op_ != c10d::ReduceOp::PRODUCT && op_.op_ != c10d::ReduceOp::MIN &&
      op_.op_ != c10d::ReduceOp::MAX) {
    throw std::invalid_argument("[MpiRingAllreduce] only SUM, PRODUCT, MIN and MAX");
  }
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  const int64_t n = tensor_.numel();
  for (int c = 0; c <= size_; ++c) chunk_begin_.push_back(n * c / size_);
  int64_t largest = 0;
  for (int c = 0; c < size_; ++c) largest = std::max(largest, chunk_begin_[c + 1] - chunk_begin_[c]);
  // Segment k covers the same share of every chunk, so it stays one unit
  // through all steps (chunk lengths differ by at most one element).
  per_segment_ = std::max<int64_t>(1, segment_bytes / static_cast<int64_t>(tensor_.element_size()));
  for (int64_t at = 0; at < largest; at += per_segment_) {
    segments_.push_back(Segment{at, std::min(per_segment_, largest - at)});
  }
  // The process group gave this ring tags() tags: every (step, segment) needs one.
  if (2 * static_cast<int64_t>(size_ - 1) * static_cast<int64_t>(segments_.size()) >
      tags(n, size_, tensor_.element_size(), segment_bytes)) {
    throw std::logic_error("[MpiRingAllreduce] more segments than tags() counted");
  }
  // A few segments travel at once: enough to overlap sending, receiving and
  // reducing, few enough that they stay in cache.
  const int64_t slots = static_cast<int64_t>(kInFlight) * std::min(per_segment_, largest);
  incoming_ = spare.defined() && spare.scalar_type() == tensor_.scalar_type() && spare.device() == tensor_.device() &&
                      spare.numel() >= slots
                  ? spare
                  : at::empty({slots}, tensor_.options());
  started_ = std::min(segments_.size(), kInFlight);
  for (size_t k = 0; k < started_; ++k) {
    segments_[k].slot = static_cast<int64_t>(k);
    post(k);
  }
}

int64_t MpiRingAllreduce::tags(int64_t numel, int size, int64_t element_size, int64_t segment_bytes) {
  const int64_t largest = (numel + size - 1) / size;
  const int64_t per_segment = std::max<int64_t>(1, segment_bytes / element_size);
  return 2 * static_cast<int64_t>(size - 1) * std::max<int64_t>(1, (largest + per_segment - 1) / per_segment);
}

at::Tensor MpiRingAllreduce::chunk(int index) const {
  const int c = ((index % size_) + size_) % size_;
  return tensor_.narrow(0, chunk_begin_[c], chunk_begin_[c + 1] - chunk_begin_[c]);
}

// Step g < size-1 (reduce-scatter): send chunk rank-g, receive chunk
// rank-g-1 and reduce it. Step g = size-1+t (all-gather): send chunk
// rank+1-t, receive chunk rank-t in place. What a step receives is what
// the next one sends.
void MpiRingAllreduce::post(size_t k) {
  Segment& s = segments_[k];
  const int g = s.step;
  const bool scatter = g < size_ - 1;
  const int t = g - (size_ - 1);
  const at::Tensor out = chunk(scatter ? rank_ - g : rank_ + 1 - t);
  const at::Tensor in = scatter ? incoming_ : chunk(rank_ - t);
  const int64_t in_begin = scatter ? s.slot * per_segment_ : s.begin;
  const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
  const int tag = tag_base_ + g * static_cast<int>(segments_.size()) + static_cast<int>(k);
  const int64_t element = tensor_.element_size();
  // The last segment may run past a chunk one element shorter than the longest.
  const int64_t out_length = std::max<int64_t>(0, std::min(s.length, out.numel() - s.begin));
  const int64_t in_length = std::max<int64_t>(0, std::min(s.length, (scatter ? chunk(rank_ - g - 1) : in).numel() - s.begin));
  auto* out_data = static_cast<char*>(out.data_ptr()) + s.begin * element;
  auto* in_data = static_cast<char*>(in.data_ptr()) + in_begin * element;
  int code = MPI_Irecv(in_data, static_cast<int>(in_length * element), MPI_BYTE, left, tag, comm_, &s.requests[0]);
  if (code == MPI_SUCCESS) {
    code = MPI_Isend(out_data, static_cast<int>(out_length * element), MPI_BYTE, right, tag, comm_, &s.requests[1]);
  }
  if (code != MPI_SUCCESS) {
    throw std::runtime_error("[MpiRingAllreduce] posting step " + std::to_string(g) + " failed with MPI error " +
                             std::to_string(code));
  }
}

bool MpiRingAllreduce::poll() {
  for (size_t k = 0; k < started_; ++k) {
    Segment& s = segments_[k];
    if (s.step >= 2 * (size_ - 1)) continue;
    int complete = 0;
    const int code = MPI_Testall(2, s.requests.data(), &complete, MPI_STATUSES_IGNORE);
    if (code != MPI_SUCCESS) {
      throw std::runtime_error("[MpiRingAllreduce] step " + std::to_string(s.step) + " failed with MPI error " +
                               std::to_string(code));
    }
    if (complete == 0) continue;
    if (s.step < size_ - 1) {
      // The reduction runs on MpiReducer's thread while this one moves bytes.
      at::Tensor target = chunk(rank_ - s.step - 1);
      const int64_t length = std::max<int64_t>(0, std::min(s.length, target.numel() - s.begin));
      // A last segment past the end of a chunk one element shorter has nothing to add.
      if (!s.reduced && length > 0) {
        s.reduced = reducer_.submit(
            [op = op_.op_, into = target.narrow(0, s.begin, length),
             from = incoming_.narrow(0, s.slot * per_segment_, length)] { MpiReducer::combine(op, into, from); });
      }
      if (s.reduced && !s.reduced->load(std::memory_order_acquire)) continue;
      s.reduced.reset();
    }
    if (++s.step < 2 * (size_ - 1)) {
      post(k);
    } else {
      ++done_;
      if (started_ < segments_.size()) {
        segments_[started_].slot = s.slot;  // the slot this one leaves
        post(started_++);
      }
    }
  }
  return done_ == segments_.size();
}

}  // namespace fulgur
