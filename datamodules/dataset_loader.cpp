#include <fulgur/datamodules/dataset_loader.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace fulgur {

namespace {

/// What an iterator needs of one epoch; shared so iterators do not depend on
/// the loader outliving them.
struct EpochPlan {
  std::shared_ptr<const Dataset> dataset;
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t num_batches = 0;

  std::vector<int64_t> indices_of(int64_t batch) const {
    const auto begin = order.begin() + batch * batch_size;
    const auto end = order.begin() + std::min<int64_t>(static_cast<int64_t>(order.size()), (batch + 1) * batch_size);
    return {begin, end};
  }

  Batch build(int64_t batch) const {
    // Worker threads start with grad mode on; data never needs autograd.
    // (Not InferenceMode: inference tensors cannot be saved for backward.)
    torch::NoGradGuard no_grad;
    return dataset->get_batch(indices_of(batch));
  }
};

/// num_workers == 0: each batch is built by the thread that asks for it.
class SerialIterator : public BatchIterator {
 public:
  SerialIterator(std::shared_ptr<const EpochPlan> plan, int64_t first) : plan_(std::move(plan)), next_(first) {}

  std::optional<Batch> next() override {
    if (error_) std::rethrow_exception(error_);
    if (next_ >= plan_->num_batches) return std::nullopt;
    try {
      Batch batch = plan_->build(next_);
      ++next_;
      return batch;
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
  }

 private:
  std::shared_ptr<const EpochPlan> plan_;
  int64_t next_;
  std::exception_ptr error_;
};

/// num_workers > 0: workers fill a ring of `window` slots; slot b % window
/// holds batch b. A worker may start batch b only when b < next_ + window,
/// so at most `window` batches exist ahead of the consumer, whatever the
/// dataset size, and a slot is never overwritten before it is consumed.
class ThreadedIterator : public BatchIterator {
 public:
  ThreadedIterator(std::shared_ptr<const EpochPlan> plan, int64_t first, int64_t num_workers, int64_t prefetch_factor)
      : plan_(std::move(plan)), window_(num_workers * prefetch_factor), next_(first) {
    slots_.resize(static_cast<size_t>(window_));
    // More threads than remaining batches would only idle.
    const int64_t threads = std::min(num_workers, plan_->num_batches - first);
    try {
      for (int64_t w = 0; w < threads; ++w) workers_.emplace_back([this, b = first + w, threads] { work(b, threads); });
    } catch (...) {
      stop_and_join();
      throw;
    }
  }

  ~ThreadedIterator() override { stop_and_join(); }

  ThreadedIterator(const ThreadedIterator&) = delete;
  ThreadedIterator& operator=(const ThreadedIterator&) = delete;

  std::optional<Batch> next() override {
    if (error_) std::rethrow_exception(error_);
    if (next_ >= plan_->num_batches) return std::nullopt;
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      Slot& due = slots_[static_cast<size_t>(next_ % window_)];
      ready_cv_.wait(lock, [&] { return due.ready; });
      slot = std::move(due);
      due = Slot{};
      ++next_;
    }
    space_cv_.notify_all();
    if (slot.error) {
      error_ = slot.error;
      // Batches after a failed one are never returned; stop building them.
      stop_and_join();
      std::rethrow_exception(error_);
    }
    return std::move(slot.batch);
  }

 private:
  struct Slot {
    bool ready = false;
    std::optional<Batch> batch;
    std::exception_ptr error;
  };

  void work(int64_t batch, int64_t stride) {
    for (; batch < plan_->num_batches; batch += stride) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        space_cv_.wait(lock, [&] { return stop_ || batch < next_ + window_; });
        if (stop_) return;
      }
      Slot slot;
      slot.ready = true;
      try {
        slot.batch = plan_->build(batch);
      } catch (...) {
        slot.error = std::current_exception();
      }
      const bool failed = static_cast<bool>(slot.error);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slots_[static_cast<size_t>(batch % window_)] = std::move(slot);
      }
      ready_cv_.notify_one();
      if (failed) return;
    }
  }

  void stop_and_join() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    space_cv_.notify_all();
    for (auto& worker : workers_) {
      if (worker.joinable()) worker.join();
    }
    workers_.clear();
  }

  std::shared_ptr<const EpochPlan> plan_;
  const int64_t window_;
  std::mutex mutex_;
  std::condition_variable ready_cv_;  // consumer waits for its slot
  std::condition_variable space_cv_;  // workers wait for the window to move
  std::vector<Slot> slots_;
  int64_t next_;  // written by the consumer under mutex_
  bool stop_ = false;
  std::exception_ptr error_;  // consumer-only: the first error, rethrown forever
  std::vector<std::thread> workers_;
};

std::string range_text(int64_t low, int64_t high) {
  return "[" + std::to_string(low) + ", " + std::to_string(high) + "]";
}

}  // namespace

DatasetLoader::DatasetLoader(std::shared_ptr<const Dataset> dataset, DatasetLoaderOptions options)
    : dataset_(std::move(dataset)), options_(std::move(options)) {
  const char* where = "[DatasetLoader::DatasetLoader] ";
  if (!dataset_) throw std::invalid_argument(std::string(where) + "dataset is null");
  if (options_.batch_size() < 1) {
    throw std::invalid_argument(std::string(where) + "batch_size must be >= 1, got " + std::to_string(options_.batch_size()));
  }
  if (options_.num_workers() < 0) {
    throw std::invalid_argument(std::string(where) + "num_workers must be >= 0, got " + std::to_string(options_.num_workers()));
  }
  if (options_.prefetch_factor() < 1) {
    throw std::invalid_argument(std::string(where) + "prefetch_factor must be >= 1, got " +
                                std::to_string(options_.prefetch_factor()));
  }
  num_examples_ = dataset_->size();
  if (num_examples_ < 0) {
    throw std::invalid_argument(std::string(where) + "dataset size must be >= 0, got " + std::to_string(num_examples_));
  }
  if (!options_.seed()) {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    options_.seed(generator.get<at::CPUGeneratorImpl>()->random64());
  }
}

void DatasetLoader::shard(const Shard& shard) {
  if (shard.num_replicas < 1 || shard.rank < 0 || shard.rank >= shard.num_replicas) {
    throw std::invalid_argument("[DatasetLoader::shard] rank " + std::to_string(shard.rank) + " is outside " +
                                std::to_string(shard.num_replicas) + " replicas");
  }
  shard_ = shard;
  options_.seed(shard.seed);
}

int64_t DatasetLoader::size() const {
  const int64_t batch = options_.batch_size();
  const int64_t examples = shard_examples();
  return options_.drop_last() ? examples / batch : (examples + batch - 1) / batch;
}

int64_t DatasetLoader::shard_examples() const {
  const int64_t replicas = shard_.num_replicas;
  if (shard_.pad) return (num_examples_ + replicas - 1) / replicas;
  return num_examples_ / replicas + (shard_.rank < num_examples_ % replicas ? 1 : 0);
}

std::vector<int64_t> DatasetLoader::epoch_order() const {
  std::vector<int64_t> order(static_cast<size_t>(num_examples_));
  if (!options_.shuffle()) {
    for (int64_t i = 0; i < num_examples_; ++i) order[static_cast<size_t>(i)] = i;
  } else {
    // Unsigned wrap-around is intended: any epoch (even negative) maps to a seed.
    auto generator = at::make_generator<at::CPUGeneratorImpl>(*options_.seed() + static_cast<uint64_t>(epoch_));
    const torch::Tensor permutation = torch::randperm(num_examples_, generator, torch::kLong).contiguous();
    std::copy(permutation.data_ptr<int64_t>(), permutation.data_ptr<int64_t>() + num_examples_, order.begin());
  }
  if (shard_.num_replicas == 1 || num_examples_ == 0) return order;
  // Every rank sees the same permutation (same seed and epoch) and keeps its stride.
  const int64_t total = shard_.pad ? shard_examples() * shard_.num_replicas : num_examples_;
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(shard_examples()));
  for (int64_t i = shard_.rank; i < total; i += shard_.num_replicas) {
    mine.push_back(order[static_cast<size_t>(i % num_examples_)]);
  }
  return mine;
}

std::unique_ptr<BatchIterator> DatasetLoader::iterate(int64_t first_batch) {
  const int64_t batches = size();
  if (first_batch < 0 || first_batch > batches) {
    throw std::out_of_range("[DatasetLoader::iterate] first_batch " + std::to_string(first_batch) + " is outside " +
                            range_text(0, batches));
  }
  auto plan = std::make_shared<EpochPlan>();
  plan->dataset = dataset_;
  plan->order = epoch_order();
  plan->batch_size = options_.batch_size();
  plan->num_batches = batches;
  if (options_.num_workers() == 0) return std::make_unique<SerialIterator>(std::move(plan), first_batch);
  return std::make_unique<ThreadedIterator>(std::move(plan), first_batch, options_.num_workers(),
                                            options_.prefetch_factor());
}

}  // namespace fulgur
