#include <fulgur/online/sample_stream.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace fulgur {

namespace {

std::vector<int64_t> sample_shape(const torch::Tensor& t) { return t.sizes().slice(1).vec(); }

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
  if (!inputs.defined() || !targets.defined() || inputs.dim() < 1 || targets.dim() < 1) {
    throw std::invalid_argument("[SampleStream::push] inputs and targets must be tensors whose first dimension "
                                "counts the samples");
  }
  if (inputs.size(0) != targets.size(0)) {
    throw std::invalid_argument(fmt::format("[SampleStream::push] inputs hold {} samples but targets {}",
                                            inputs.size(0), targets.size(0)));
  }
  if (!input_shape_) {
    input_shape_ = sample_shape(inputs);
    target_shape_ = sample_shape(targets);
    input_dtype_ = inputs.scalar_type();
    target_dtype_ = targets.scalar_type();
    return;
  }
  auto check = [](const char* what, const torch::Tensor& t, const std::vector<int64_t>& shape, at::ScalarType dtype) {
    if (sample_shape(t) != shape || t.scalar_type() != dtype) {
      throw std::invalid_argument(fmt::format(
          "[SampleStream::push] {} sample shape [{}] dtype {} differs from the first push's [{}] {}", what,
          fmt::join(sample_shape(t), ","), c10::toString(t.scalar_type()), fmt::join(shape, ","),
          c10::toString(dtype)));
    }
  };
  check("inputs", inputs, *input_shape_, input_dtype_);
  check("targets", targets, *target_shape_, target_dtype_);
}

void SampleStream::push(const torch::Tensor& inputs, const torch::Tensor& targets) {
  std::unique_lock lock(mutex_);
  if (ended_) throw std::logic_error("[SampleStream::push] the stream has ended (end() was called)");
  check_sample(inputs, targets);
  const int64_t n = inputs.size(0);
  if (options_.when_full == WhenFull::Block && n > options_.capacity) {
    throw std::invalid_argument(fmt::format(
        "[SampleStream::push] {} samples at once exceed the capacity ({}) of a blocking stream", n, options_.capacity));
  }
  // The copy is made before waiting: the caller's memory is never kept.
  const torch::Tensor x = inputs.detach().to(torch::kCPU).clone();
  const torch::Tensor y = targets.detach().to(torch::kCPU).clone();
  if (options_.when_full == WhenFull::Block) {
    changed_.wait(lock, [&] { return static_cast<int64_t>(samples_.size()) + n <= options_.capacity || ended_; });
    if (ended_) throw std::logic_error("[SampleStream::push] the stream ended while this push waited for room");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(samples_.size()) == options_.capacity) {
      samples_.pop_front();
      ++dropped_;
    }
    samples_.emplace_back(x[i], y[i]);
  }
  pushed_ += n;
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
  const auto n = static_cast<int64_t>(samples_.size());
  if (options_.when_full == WhenFull::Replay) return !ended_ && n >= options_.min_samples;
  return n >= options_.batch_size || (ended_ && n > 0);
}

bool SampleStream::exhausted() const {
  std::lock_guard lock(mutex_);
  return ended_ && !can_yield();
}

std::optional<Batch> SampleStream::next_batch() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return can_yield() || ended_; });
  if (!can_yield()) return std::nullopt;
  Batch batch = options_.when_full == WhenFull::Replay ? draw_replay() : take_fifo();
  changed_.notify_all();  // a blocked producer may have room now
  return batch;
}

Batch SampleStream::take_fifo() {
  const int64_t n = std::min<int64_t>(options_.batch_size, static_cast<int64_t>(samples_.size()));
  std::vector<torch::Tensor> xs, ys;
  for (int64_t i = 0; i < n; ++i) {
    xs.push_back(samples_.front().first);
    ys.push_back(samples_.front().second);
    samples_.pop_front();
  }
  return Batch{torch::stack(xs), torch::stack(ys), {}};
}

Batch SampleStream::draw_replay() {
  std::uniform_int_distribution<size_t> index(0, samples_.size() - 1);
  std::vector<torch::Tensor> xs, ys;
  for (int64_t i = 0; i < options_.batch_size; ++i) {
    const auto& [x, y] = samples_[index(generator_)];
    xs.push_back(x);
    ys.push_back(y);
  }
  return Batch{torch::stack(xs), torch::stack(ys), {}};
}

std::pair<torch::Tensor, torch::Tensor> SampleStream::buffered_samples() const {
  std::lock_guard lock(mutex_);
  if (samples_.empty()) return {};
  std::vector<torch::Tensor> xs, ys;
  for (const auto& [x, y] : samples_) {
    xs.push_back(x);
    ys.push_back(y);
  }
  return {torch::stack(xs), torch::stack(ys)};
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
  return static_cast<int64_t>(samples_.size());
}

std::unique_ptr<BatchIterator> SampleStream::iterate(int64_t first_batch) {
  return std::make_unique<StreamIterator>(*this, options_.steps_per_epoch - first_batch);
}

}  // namespace fulgur
