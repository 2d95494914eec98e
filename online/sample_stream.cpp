#include <fulgur/online/sample_stream.hpp>

#include <fmt/format.h>

#include <chrono>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace fulgur {

namespace {

// Tensors whose first dimension counts the samples, the same in both.
void check_counts(const torch::Tensor& inputs, const torch::Tensor& targets) {
  if (!inputs.defined() || !targets.defined() || inputs.dim() < 1 || targets.dim() < 1) {
    throw std::invalid_argument("[SampleStream::push] inputs and targets must be tensors whose first dimension "
                                "counts the samples");
  }
  if (inputs.size(0) != targets.size(0)) {
    throw std::invalid_argument(fmt::format("[SampleStream::push] inputs hold {} samples but targets {}",
                                            inputs.size(0), targets.size(0)));
  }
}

// Copies row `from` of `source` (contiguous, the ring's dtype) into row `to` of `ring`.
void copy_row(const torch::Tensor& source, int64_t from, torch::Tensor& ring, int64_t to) {
  const auto bytes = static_cast<size_t>(ring.numel() / ring.size(0)) * ring.element_size();
  if (bytes == 0) return;
  std::memcpy(static_cast<char*>(ring.data_ptr()) + static_cast<size_t>(to) * bytes,
              static_cast<const char*>(source.data_ptr()) + static_cast<size_t>(from) * bytes, bytes);
}

class StreamIterator : public BatchIterator {
 public:
  StreamIterator(SampleStream& stream, int64_t remaining) : stream_(stream), remaining_(remaining) {}
  std::optional<Batch> next() override {
    if (remaining_ <= 0) return std::nullopt;
    --remaining_;
    return stream_.next_batch();
  }

 private:
  SampleStream& stream_;
  int64_t remaining_;
};

}  // namespace

SampleStream::SampleStream(SampleStreamOptions options) : options_(options), generator_(options.seed) {
  auto positive = [](const char* name, int64_t value) {
    if (value < 1) throw std::invalid_argument(fmt::format("[SampleStreamOptions] {} must be >= 1, got {}", name, value));
  };
  positive("capacity", options_.capacity);
  positive("batch_size", options_.batch_size);
  positive("steps_per_epoch", options_.steps_per_epoch);
  if (options_.min_samples == 0) options_.min_samples = options_.batch_size;
  if (options_.batch_size > options_.capacity || options_.min_samples > options_.capacity) {
    throw std::invalid_argument(fmt::format(
        "[SampleStreamOptions] batch_size ({}) and min_samples ({}) must not exceed capacity ({})",
        options_.batch_size, options_.min_samples, options_.capacity));
  }
}

void SampleStream::check_sample(const torch::Tensor& inputs, const torch::Tensor& targets) {
  if (!input_shape_) {
    input_shape_ = inputs.sizes().slice(1).vec();
    target_shape_ = targets.sizes().slice(1).vec();
    auto ring_shape = [this](const std::vector<int64_t>& sample) {
      std::vector<int64_t> shape{options_.capacity};
      shape.insert(shape.end(), sample.begin(), sample.end());
      return shape;
    };
    inputs_ = torch::empty(ring_shape(*input_shape_), inputs.options());
    targets_ = torch::empty(ring_shape(*target_shape_), targets.options());
    row_source_.assign(static_cast<size_t>(options_.capacity), -1);
    row_trained_.assign(static_cast<size_t>(options_.capacity), 0);
    return;
  }
  auto check = [](const char* what, const torch::Tensor& t, const torch::Tensor& ring) {
    if (t.sizes().slice(1) != ring.sizes().slice(1) || t.scalar_type() != ring.scalar_type()) {
      throw std::invalid_argument(fmt::format(
          "[SampleStream::push] {} sample shape [{}] dtype {} differs from the first push's [{}] {}", what,
          fmt::join(t.sizes().slice(1), ","), c10::toString(t.scalar_type()), fmt::join(ring.sizes().slice(1), ","),
          c10::toString(ring.scalar_type())));
    }
  };
  check("inputs", inputs, inputs_);
  check("targets", targets, targets_);
}

void SampleStream::push(const torch::Tensor& inputs, const torch::Tensor& targets, int64_t source) {
  check_counts(inputs, targets);
  // Host tensors are read in place; a device's come over first, outside the lock.
  auto host = [](const torch::Tensor& t) { return t.is_cpu() && t.is_contiguous() ? t : t.detach().cpu().contiguous(); };
  const torch::Tensor x = host(inputs);
  const torch::Tensor y = host(targets);
  std::unique_lock lock(mutex_);
  if (ended_) throw std::logic_error("[SampleStream::push] the stream has ended (end() was called)");
  check_sample(x, y);
  const int64_t n = x.size(0);
  if (options_.when_full == WhenFull::Block) {
    if (n > options_.capacity) {
      throw std::invalid_argument(fmt::format(
          "[SampleStream::push] {} samples at once exceed the capacity ({}) of a blocking stream", n,
          options_.capacity));
    }
    changed_.wait(lock, [&] { return size_ + n <= options_.capacity || ended_; });
    if (ended_) throw std::logic_error("[SampleStream::push] the stream ended while this push waited for room");
  }
  // More samples than the ring holds: the newest stay.
  const int64_t first = std::max<int64_t>(0, n - options_.capacity);
  SampleSourceCounts& counts = by_source_[source];
  dropped_ += first;
  counts.evicted_untrained += first;
  for (int64_t i = first; i < n; ++i) {
    if (size_ == options_.capacity) {  // drop the oldest
      const auto oldest = static_cast<size_t>(head_);
      if (row_trained_[oldest] == 0) ++by_source_[row_source_[oldest]].evicted_untrained;
      head_ = (head_ + 1) % options_.capacity;
      --size_;
      ++dropped_;
    }
    const int64_t row = (head_ + size_) % options_.capacity;
    copy_row(x, i, inputs_, row);
    copy_row(y, i, targets_, row);
    row_source_[static_cast<size_t>(row)] = source;
    row_trained_[static_cast<size_t>(row)] = 0;
    ++size_;
  }
  pushed_ += n;
  counts.pushed += n;
  changed_.notify_all();
}

void SampleStream::push(const float* inputs, at::IntArrayRef input_shape, const float* targets,
                        at::IntArrayRef target_shape) {
  // from_blob does not copy; push() does, before it returns.
  push(torch::from_blob(const_cast<float*>(inputs), input_shape, torch::kFloat32),
       torch::from_blob(const_cast<float*>(targets), target_shape, torch::kFloat32));
}

void SampleStream::push(const double* inputs, at::IntArrayRef input_shape, const double* targets,
                        at::IntArrayRef target_shape) {
  push(torch::from_blob(const_cast<double*>(inputs), input_shape, torch::kFloat64),
       torch::from_blob(const_cast<double*>(targets), target_shape, torch::kFloat64));
}

void SampleStream::end() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

bool SampleStream::ended() const {
  std::lock_guard lock(mutex_);
  return ended_;
}

bool SampleStream::can_yield() const {
  if (options_.when_full == WhenFull::Replay) return !ended_ && size_ >= options_.min_samples;
  return size_ >= options_.batch_size || (ended_ && size_ > 0);
}

bool SampleStream::exhausted() const {
  std::lock_guard lock(mutex_);
  return ended_ && !can_yield();
}

std::optional<Batch> SampleStream::next_batch(const std::function<bool()>& stop) {
  std::unique_lock lock(mutex_);
  const auto ready = [&] { return can_yield() || ended_; };
  if (stop) {
    // A signal handler cannot notify a condition variable: look every 50 ms.
    while (!changed_.wait_for(lock, std::chrono::milliseconds(50), ready)) {
      if (stop()) return std::nullopt;
    }
  } else {
    changed_.wait(lock, ready);
  }
  if (!can_yield()) return std::nullopt;
  Batch batch = options_.when_full == WhenFull::Replay ? draw_replay() : take_fifo();
  changed_.notify_all();  // a blocked producer may have room now
  return batch;
}

std::pair<torch::Tensor, torch::Tensor> SampleStream::gather(const std::vector<int64_t>& logical) const {
  torch::Tensor rows = torch::empty({static_cast<int64_t>(logical.size())}, torch::kInt64);
  auto* row = rows.data_ptr<int64_t>();
  for (const int64_t i : logical) *row++ = (head_ + i) % options_.capacity;
  return {inputs_.index_select(0, rows), targets_.index_select(0, rows)};
}

Batch SampleStream::take_fifo() {
  std::vector<int64_t> oldest(static_cast<size_t>(std::min(options_.batch_size, size_)));
  std::iota(oldest.begin(), oldest.end(), int64_t{0});
  auto [x, y] = gather(oldest);
  mark_trained(oldest);
  head_ = (head_ + static_cast<int64_t>(oldest.size())) % options_.capacity;
  size_ -= static_cast<int64_t>(oldest.size());
  return Batch{std::move(x), std::move(y), {}};
}

Batch SampleStream::draw_replay() {
  std::uniform_int_distribution<int64_t> index(0, size_ - 1);
  std::vector<int64_t> drawn(static_cast<size_t>(options_.batch_size));
  for (auto& i : drawn) i = index(generator_);
  auto [x, y] = gather(drawn);
  mark_trained(drawn);
  return Batch{std::move(x), std::move(y), {}};
}

void SampleStream::mark_trained(const std::vector<int64_t>& logical) {
  for (const int64_t i : logical) {
    const auto row = static_cast<size_t>((head_ + i) % options_.capacity);
    if (row_trained_[row] != 0) continue;
    row_trained_[row] = 1;
    ++by_source_[row_source_[row]].trained;
  }
}

int64_t SampleStream::trained() const {
  std::lock_guard lock(mutex_);
  int64_t trained = 0;
  for (const auto& [source, counts] : by_source_) trained += counts.trained;
  return trained;
}

std::map<int64_t, SampleSourceCounts> SampleStream::counts_by_source() const {
  std::lock_guard lock(mutex_);
  return by_source_;
}

std::pair<torch::Tensor, torch::Tensor> SampleStream::buffered_samples() const {
  std::lock_guard lock(mutex_);
  if (size_ == 0) return {};
  std::vector<int64_t> all(static_cast<size_t>(size_));
  std::iota(all.begin(), all.end(), int64_t{0});
  return gather(all);
}

int64_t SampleStream::pushed() const {
  std::lock_guard lock(mutex_);
  return pushed_;
}

int64_t SampleStream::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

int64_t SampleStream::buffered() const {
  std::lock_guard lock(mutex_);
  return size_;
}

std::unique_ptr<BatchIterator> SampleStream::iterate(int64_t first_batch) {
  return std::make_unique<StreamIterator>(*this, options_.steps_per_epoch - first_batch);
}

}  // namespace fulgur
