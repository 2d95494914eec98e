#include <fulgur/strategies/collectives/gradient_reducer.hpp>

#include <fulgur/strategies/collectives/process_group.hpp>
#include <fulgur/strategies/collectives/timeline.hpp>

#include <fmt/format.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <chrono>
#include <stdexcept>

namespace fulgur {

GradientReducer::GradientReducer(std::vector<torch::Tensor> parameters, std::vector<std::string> names,
                                 ProcessGroup& group, const DDPOptions& options, Timeline* timeline)
    : parameters_(std::move(parameters)),
      names_(std::move(names)),
      group_(group),
      options_(options),
      timeline_(timeline),
      hooks_(parameters_, [this](size_t k) { on_gradient_ready(k); }, "ddp.find_unused_parameters") {
  bucket_of_.resize(parameters_.size());
  const int64_t bucket_cap = static_cast<int64_t>(options_.bucket_cap_mb() * (1 << 20));
  const int64_t first_bucket_cap = std::min<int64_t>(kFirstBucketBytes, bucket_cap);
  // Reverse order: the last layers' gradients are ready first in backward.
  int64_t bucket_bytes = 0;
  for (size_t k = parameters_.size(); k-- > 0;) {
    const torch::Tensor& p = parameters_[k];
    if (!p.requires_grad()) continue;
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const int64_t limit = buckets_.size() <= 1 ? first_bucket_cap : bucket_cap;
    const bool fits = !buckets_.empty() && bucket_bytes + bytes <= limit &&
                      parameters_[buckets_.back().params.front()].options().type_equal(p.options());
    if (!fits) {
      buckets_.emplace_back();
      bucket_bytes = 0;
    }
    buckets_.back().params.push_back(k);
    buckets_.back().numel += p.numel();
    bucket_bytes += bytes;
    bucket_of_[k] = buckets_.size() - 1;
  }
  views_.resize(parameters_.size());
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) {
    const torch::Tensor& first = parameters_[bucket.params.front()];
    bucket.buffer = torch::zeros({bucket.numel}, first.options().requires_grad(false));
    int64_t offset = 0;
    for (size_t k : bucket.params) {
      // Shares the bucket's storage without being an autograd view, so
      // optimizer.zero_grad() (which detaches gradients in place) works on it.
      const torch::Tensor& p = parameters_[k];
      const torch::Tensor shaped = bucket.buffer.narrow(0, offset, p.numel()).view(p.sizes());
      views_[k] = torch::empty({0}, bucket.buffer.options());
      views_[k].set_(bucket.buffer.storage(), shaped.storage_offset(), shaped.sizes(), shaped.strides());
      offset += p.numel();
    }
  }
}

GradientReducer::~GradientReducer() = default;

void GradientReducer::prepare(bool sync) {
  syncing_ = sync;
  in_backward_ = true;
  launched_in_backward_ = 0;
  next_to_launch_ = 0;
  hooks_.reset();
  torch::NoGradGuard no_grad;
  for (auto& bucket : buckets_) {
    bucket.pending = static_cast<int64_t>(bucket.params.size());
    bucket.work.reset();
    bucket.first_ready = std::chrono::steady_clock::time_point::max();
    // zero_grad() sets gradients to none: backward must accumulate into the
    // bucket, so they become its (zeroed) views again. One fill per bucket
    // when all of them were reset, as after every optimizer step.
    bool all_none = true;
    for (size_t k : bucket.params) all_none = all_none && !parameters_[k].grad().defined();
    if (all_none) bucket.buffer.zero_();
    for (size_t k : bucket.params) {
      torch::Tensor& p = parameters_[k];
      const torch::Tensor& grad = p.grad();
      if (grad.defined() && grad.data_ptr() == views_[k].data_ptr() && grad.sizes() == views_[k].sizes()) continue;
      if (!grad.defined()) {
        if (!all_none) views_[k].zero_();
      } else {
        views_[k].copy_(grad);  // replaced by someone: keep its values
      }
      p.mutable_grad() = views_[k];
    }
  }
}

void GradientReducer::on_gradient_ready(size_t k) {
  if (!syncing_ || !hooks_.mark_ready(k)) return;
  Bucket& bucket = buckets_[bucket_of_[k]];
  if (bucket.pending == static_cast<int64_t>(bucket.params.size())) bucket.first_ready = std::chrono::steady_clock::now();
  if (--bucket.pending == 0) launch_ready_buckets();
}

void GradientReducer::launch_ready_buckets() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) {
    launch(buckets_[next_to_launch_]);
    if (in_backward_) ++launched_in_backward_;
    ++next_to_launch_;
  }
}

void GradientReducer::launch(Bucket& bucket) {
  // A gradient replaced during backward (a hook) is not in the bucket yet.
  for (size_t k : bucket.params) {
    const torch::Tensor& grad = parameters_[k].grad();
    if (!grad.defined() || grad.data_ptr() != views_[k].data_ptr()) {
      torch::NoGradGuard no_grad;
      if (grad.defined()) {
        views_[k].copy_(grad);
      } else {
        views_[k].zero_();
      }
      parameters_[k].mutable_grad() = views_[k];
    }
  }
  bucket.launched = std::chrono::steady_clock::now();
  if (bucket.buffer.is_cpu() && bucket.buffer.nbytes() <= static_cast<size_t>(kRingBytes)) {
    group_.ring_all_reduce(bucket.buffer, ReduceOp::Mean);  // done when it returns
    bucket.ring_done = std::chrono::steady_clock::now();
    return;
  }
  bucket.work = group_.all_reduce_async(bucket.buffer, ReduceOp::Mean);
}

void GradientReducer::finish() {
  in_backward_ = false;
  if (!syncing_) return;
  // Parameters that took no part in this step's graph.
  for (auto& bucket : buckets_) {
    if (bucket.pending == 0) continue;
    for (size_t k : bucket.params) {
      if (hooks_.is_ready(k)) continue;
      hooks_.mark_missing(k, options_.find_unused_parameters(), "GradientReducer::finish", names_[k], group_.rank());
    }
    bucket.pending = 0;
  }
  launch_ready_buckets();
  const auto wait_start = std::chrono::steady_clock::now();
  for (auto& bucket : buckets_) {
    if (bucket.work) group_.wait(bucket.work, "all_reduce");
    if (timeline_) {
      // Unused parameters enter at finish(): their bucket queued from then.
      const auto queued = std::min(bucket.first_ready, bucket.launched);
      const std::string what = fmt::format("bucket {} ({} tensors)", &bucket - buckets_.data(), bucket.params.size());
      const int64_t bytes = bucket.buffer.nbytes();
      timeline_->record("QUEUE", collectives_, what, bytes, queued, bucket.launched);
      const auto end = bucket.work ? std::chrono::steady_clock::now() : bucket.ring_done;
      timeline_->record("ALLREDUCE", collectives_, what, bytes, bucket.launched, end);
    }
    ++collectives_;
    bucket.work.reset();
  }
  total_wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
}

}  // namespace fulgur
