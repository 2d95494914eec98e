#include <fulgur/strategies/mpi/mpi_ring_reduce_scatter.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace fulgur {

MpiRingReduceScatter::MpiRingReduceScatter(at::Tensor output, at::Tensor input, c10d::ReduceOp op, MPI_Comm comm,
                                           int tag_base, int64_t segment_bytes, MpiReducer& reducer, at::Tensor spare)
    : output_(output.view(-1)), input_(input.view(-1)), op_(op), reducer_(reducer), comm_(comm), tag_base_(tag_base) {
  if (op_.op_ != c10d::ReduceOp::SUM && op_.op_ != c10d::ReduceOp::PRODUCT && op_.op_ != c10d::ReduceOp::MIN &&
      op_.op_ != c10d::ReduceOp::MAX) {
    throw std::invalid_argument("[MpiRingReduceScatter] only SUM, PRODUCT, MIN and MAX");
  }
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  const int64_t length = output_.numel();
  per_segment_ = std::max<int64_t>(1, segment_bytes / static_cast<int64_t>(output_.element_size()));
  for (int64_t at = 0; at < length; at += per_segment_) {
    segments_.push_back(Segment{at, std::min(per_segment_, length - at)});
  }
  // The process group gave this ring tags() tags: every (step, segment) needs one.
  if (static_cast<int64_t>(size_ - 1) * static_cast<int64_t>(segments_.size()) >
      tags(length, size_, output_.element_size(), segment_bytes)) {
    throw std::logic_error("[MpiRingReduceScatter] more segments than tags() counted");
  }
  if (size_ > 2) {
    const int64_t slots = 2 * static_cast<int64_t>(kInFlight) * std::min(per_segment_, length);
    slots_ = spare.defined() && spare.scalar_type() == output_.scalar_type() &&
                     spare.device() == output_.device() && spare.numel() >= slots
                 ? spare
                 : at::empty({slots}, output_.options());
  }
  started_ = std::min(segments_.size(), kInFlight);
  for (size_t k = 0; k < started_; ++k) {
    segments_[k].slot = static_cast<int64_t>(k);
    post(k);
  }
}

int64_t MpiRingReduceScatter::tags(int64_t numel, int size, int64_t element_size, int64_t segment_bytes) {
  const int64_t per_segment = std::max<int64_t>(1, segment_bytes / element_size);
  return static_cast<int64_t>(size - 1) * std::max<int64_t>(1, (numel + per_segment - 1) / per_segment);
}

at::Tensor MpiRingReduceScatter::chunk(const at::Tensor& t, int index) const {
  const int c = ((index % size_) + size_) % size_;
  return t.narrow(0, c * output_.numel(), output_.numel());
}

at::Tensor MpiRingReduceScatter::received(const Segment& s, int step) const {
  if (step == size_ - 2) return output_.narrow(0, s.begin, s.length);
  return slots_.narrow(0, (2 * s.slot + step % 2) * per_segment_, s.length);
}

// Step g sends the partial sum of chunk rank-g-1 (at g = 0 this rank's own
// input) and receives chunk rank-g-2's, to which it adds its own input
// before the next step sends it on. The last step (size-2) receives chunk
// rank's partial sum into the output.
void MpiRingReduceScatter::post(size_t k) {
  Segment& s = segments_[k];
  const int g = s.step;
  const at::Tensor out = g == 0 ? chunk(input_, rank_ - 1).narrow(0, s.begin, s.length) : received(s, g - 1);
  const at::Tensor in = received(s, g);
  const int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
  const int tag = tag_base_ + g * static_cast<int>(segments_.size()) + static_cast<int>(k);
  const auto bytes = static_cast<int>(s.length * static_cast<int64_t>(output_.element_size()));
  int code = MPI_Irecv(in.data_ptr(), bytes, MPI_BYTE, left, tag, comm_, &s.requests[0]);
  if (code == MPI_SUCCESS) code = MPI_Isend(out.data_ptr(), bytes, MPI_BYTE, right, tag, comm_, &s.requests[1]);
  if (code != MPI_SUCCESS) {
    throw std::runtime_error("[MpiRingReduceScatter] posting step " + std::to_string(g) + " failed with MPI error " +
                             std::to_string(code));
  }
}

bool MpiRingReduceScatter::poll() {
  for (size_t k = 0; k < started_; ++k) {
    Segment& s = segments_[k];
    if (s.step >= size_ - 1) continue;
    if (!s.reduced) {
      int complete = 0;
      const int code = MPI_Testall(2, s.requests.data(), &complete, MPI_STATUSES_IGNORE);
      if (code != MPI_SUCCESS) {
        throw std::runtime_error("[MpiRingReduceScatter] step " + std::to_string(s.step) +
                                 " failed with MPI error " + std::to_string(code));
      }
      if (complete == 0) continue;
      // This rank's share of what arrived, added on MpiReducer's thread while this one moves bytes.
      s.reduced = reducer_.submit(
          [op = op_.op_, into = received(s, s.step),
           from = chunk(input_, rank_ - s.step - 2).narrow(0, s.begin, s.length)] {
            MpiReducer::combine(op, into, from);
          });
    }
    if (!s.reduced->load(std::memory_order_acquire)) continue;
    s.reduced.reset();
    if (++s.step < size_ - 1) {
      post(k);
    } else {
      ++done_;
      if (started_ < segments_.size()) {
        segments_[started_].slot = s.slot;  // the slots this one leaves
        post(started_++);
      }
    }
  }
  return done_ == segments_.size();
}

}  // namespace fulgur
