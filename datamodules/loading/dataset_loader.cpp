#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <fulgur/datamodules/error_reason.hpp>
#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/loading/worker_pool.hpp>

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

namespace fulgur {

/// What an iterator needs of one epoch; shared so iterators and the tasks
/// they queued do not depend on the loader outliving them.
struct DatasetLoader::EpochPlan {
  std::shared_ptr<const Dataset> dataset;
  int64_t epoch = 0;
  std::vector<int64_t> order;
  int64_t batch_size = 1;
  int64_t num_batches = 0;
  std::optional<BatchPinner> pinner;  // set: pin_memory
  std::shared_ptr<BadSampleLog> bad_samples;  // set: skip bad samples

  std::vector<int64_t> indices_of(int64_t batch) const {
    const auto begin = order.begin() + batch * batch_size;
    const auto end = order.begin() + std::min<int64_t>(static_cast<int64_t>(order.size()), (batch + 1) * batch_size);
    return {begin, end};
  }

  Batch build(int64_t batch) const {
    // Worker threads start with grad mode on; data never needs autograd.
    // (Not InferenceMode: inference tensors cannot be saved for backward.)
    torch::NoGradGuard no_grad;
    Batch result = bad_samples ? build_skipping_bad(indices_of(batch)) : dataset->get_batch(indices_of(batch));
    return pinner ? pinner->pin(result) : result;
  }

  /// Each sample that throws DataError is replaced by the next good index,
  /// so the batch keeps its size and the epoch its number of batches. The
  /// batch is read whole first (a dataset's get_batch may be much faster
  /// than one get() per sample: GPU decoding); only a batch that fails or
  /// holds a known bad sample is read sample by sample.
  Batch build_skipping_bad(const std::vector<int64_t>& indices) const {
    const bool known_bad =
        std::any_of(indices.begin(), indices.end(), [&](int64_t index) { return bad_samples->is_bad(index); });
    if (!known_bad) {
      try {
        return dataset->get_batch(indices);
      } catch (const DataError&) {
        // Found below, sample by sample, and recorded.
      }
    }
    std::vector<Example> examples;
    for (const int64_t index : indices) examples.push_back(good_example_from(index));
    return dataset->collate(std::move(examples));
  }

  Example good_example_from(int64_t index) const {
    const int64_t n = dataset->size();
    for (int64_t step = 0; step < n; ++step) {
      const int64_t candidate = (index + step) % n;
      if (bad_samples->is_bad(candidate)) continue;
      try {
        return dataset->get(candidate);
      } catch (const DataError& error) {
        bad_samples->record(candidate, error_reason(error));
      }
    }
    throw DataError("[DatasetLoader] skip_bad_samples: every one of the " + std::to_string(n) +
                    " samples is bad; the first: " + bad_samples->reason(index));
  }
};

namespace {

using EpochPlan = DatasetLoader::EpochPlan;

/// num_workers == 0: each batch is built by the thread that asks for it.
class SerialIterator : public BatchIterator {
 public:
  SerialIterator(std::shared_ptr<const EpochPlan> plan, int64_t first) : plan_(std::move(plan)), next_(first) {}

  std::optional<Batch> next() override {
    if (error_) std::rethrow_exception(error_);
    if (next_ >= plan_->num_batches) {
      finish();
      return std::nullopt;
    }
    try {
      Batch batch = plan_->build(next_);
      // The epoch's last batch ends it: loops stop asking after it.
      if (++next_ == plan_->num_batches) finish();
      return batch;
    } catch (...) {
      error_ = std::current_exception();
      throw;
    }
  }

 private:
  void finish() {
    if (finished_) return;
    finished_ = true;
    plan_->dataset->finished_epoch(plan_->epoch);
  }

  std::shared_ptr<const EpochPlan> plan_;
  int64_t next_;
  std::exception_ptr error_;
  bool finished_ = false;
};

/// num_workers > 0: batch b is a task on the worker pool that fills slot
/// b % window. Batch b is queued only once the consumer has taken batch
/// b - window, so at most `window` batches exist ahead of the consumer,
/// whatever the dataset size, and a slot is never overwritten before it is
/// consumed. Workers never wait on the consumer: when the window is full
/// they simply have no task, so stopping never has to wake a blocked one.
/// `all_submitted` runs once, in the consumer's thread, when the last batch
/// of the epoch has been queued (persistent workers start the next epoch's
/// batches behind it).
class PooledIterator : public BatchIterator {
 public:
  PooledIterator(std::shared_ptr<const EpochPlan> plan, int64_t first, std::shared_ptr<WorkerPool> pool,
                 int64_t window, bool owns_pool)
      : plan_(std::move(plan)), pool_(std::move(pool)), owns_pool_(owns_pool), window_(window), next_(first) {
    state_->slots.resize(static_cast<size_t>(window_));
    for (int64_t b = first; b < std::min(first + window_, plan_->num_batches); ++b) submit(b);
  }

  /// Set after construction, so the hook may itself make an iterator.
  void on_all_submitted(std::function<void()> hook) {
    all_submitted_ = std::move(hook);
    if (next_ + window_ >= plan_->num_batches) run_all_submitted();
  }

  ~PooledIterator() override { stop(); }

  PooledIterator(const PooledIterator&) = delete;
  PooledIterator& operator=(const PooledIterator&) = delete;

  std::optional<Batch> next() override {
    if (error_) std::rethrow_exception(error_);
    if (next_ >= plan_->num_batches) {
      finish();
      return std::nullopt;
    }
    Slot slot;
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      Slot& due = state_->slots[static_cast<size_t>(next_ % window_)];
      state_->ready_cv.wait(lock, [&] { return due.ready; });
      slot = std::move(due);
      due = Slot{};
    }
    if (slot.error) {
      error_ = slot.error;
      // Batches after a failed one are never returned; stop building them.
      stop();
      std::rethrow_exception(error_);
    }
    if (next_ + window_ < plan_->num_batches) {
      submit(next_ + window_);
      if (next_ + window_ + 1 == plan_->num_batches) run_all_submitted();
    }
    // The epoch's last batch ends it: loops stop asking after it.
    if (++next_ == plan_->num_batches) finish();
    return std::move(slot.batch);
  }

 private:
  void finish() {
    if (finished_) return;
    finished_ = true;
    plan_->dataset->finished_epoch(plan_->epoch);
  }

  struct Slot {
    bool ready = false;
    std::optional<Batch> batch;
    std::exception_ptr error;
  };
  /// Shared with the queued tasks, which may start after this iterator died.
  struct State {
    std::mutex mutex;
    std::condition_variable ready_cv;    // the consumer waits for its slot
    std::condition_variable running_cv;  // stop() waits for running tasks
    std::vector<Slot> slots;
    int64_t running = 0;
    bool cancelled = false;
  };

  void submit(int64_t batch) {
    pool_->submit([state = state_, plan = plan_, batch, window = window_] {
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        if (state->cancelled) return;
        ++state->running;
      }
      Slot slot;
      slot.ready = true;
      try {
        slot.batch = plan->build(batch);
      } catch (...) {
        slot.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->slots[static_cast<size_t>(batch % window)] = std::move(slot);
        --state->running;
      }
      state->ready_cv.notify_one();
      state->running_cv.notify_all();
    });
  }

  void run_all_submitted() {
    if (!all_submitted_) return;
    auto hook = std::move(all_submitted_);
    all_submitted_ = nullptr;
    hook();
  }

  /// Cancels the queued tasks and waits for the running ones (at most one
  /// batch per worker), so nothing of this iterator runs after it is gone.
  void stop() {
    {
      std::unique_lock<std::mutex> lock(state_->mutex);
      state_->cancelled = true;
      state_->running_cv.wait(lock, [&] { return state_->running == 0; });
    }
    if (owns_pool_) pool_.reset();  // joins this iterator's own threads
  }

  std::shared_ptr<const EpochPlan> plan_;
  std::shared_ptr<WorkerPool> pool_;
  const bool owns_pool_;
  const int64_t window_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
  int64_t next_;
  std::exception_ptr error_;  // the first error, rethrown forever
  bool finished_ = false;
  std::function<void()> all_submitted_;
};

std::string range_text(int64_t low, int64_t high) {
  // Appended: g++ 12 warns (-Wstringop-overflow, a false positive) on "[" + a temporary string.
  std::string text(1, '[');
  text += std::to_string(low) + ", " + std::to_string(high) + "]";
  return text;
}

int64_t checked_size(const std::shared_ptr<const Dataset>& dataset) {
  if (!dataset) throw std::invalid_argument("[DatasetLoader::DatasetLoader] dataset is null");
  return dataset->size();
}

}  // namespace

DatasetLoader::DatasetLoader(std::shared_ptr<const Dataset> dataset, DatasetLoaderOptions options)
    : dataset_(std::move(dataset)),
      options_(std::move(options)),
      sampler_(checked_size(dataset_), DistributedSamplerOptions().shuffle(options_.shuffle())) {
  const char* where = "[DatasetLoader::DatasetLoader] ";
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
  if (!options_.seed()) {
    auto generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    options_.seed(generator.get<at::CPUGeneratorImpl>()->random64());
  }
  sampler_ = DistributedSampler(sampler_.dataset_size(), DistributedSamplerOptions(sampler_.options()).seed(*options_.seed()));
}

void DatasetLoader::shard(const Shard& shard) {
  if (shard.num_replicas < 1 || shard.rank < 0 || shard.rank >= shard.num_replicas) {
    throw std::invalid_argument("[DatasetLoader::shard] rank " + std::to_string(shard.rank) + " is outside " +
                                std::to_string(shard.num_replicas) + " replicas");
  }
  sampler_ = DistributedSampler(sampler_.dataset_size(), DistributedSamplerOptions()
                                                             .num_replicas(shard.num_replicas)
                                                             .rank(shard.rank)
                                                             .shuffle(options_.shuffle())
                                                             .seed(shard.seed)
                                                             .pad(shard.pad));
  options_.seed(shard.seed);
  ++generation_;
}

void DatasetLoader::set_device(const torch::Device& device) {
  if (auto view = dataset_->for_device(device)) {
    dataset_ = std::move(view);
    ++generation_;
  }
}

int64_t DatasetLoader::size() const {
  const int64_t batch = options_.batch_size();
  const int64_t examples = shard_examples();
  return options_.drop_last() ? examples / batch : (examples + batch - 1) / batch;
}

int64_t DatasetLoader::shard_examples() const { return sampler_.size(); }

std::vector<int64_t> DatasetLoader::epoch_order() const {
  DistributedSampler sampler = sampler_;
  sampler.set_epoch(epoch_);
  return sampler.indices();
}

std::shared_ptr<const DatasetLoader::EpochPlan> DatasetLoader::plan(int64_t epoch) const {
  auto plan = std::make_shared<EpochPlan>();
  plan->epoch = epoch;
  plan->dataset = dataset_->at_epoch(epoch);
  if (!plan->dataset) {
    plan->dataset = dataset_;
  } else if (plan->dataset->size() != dataset_->size()) {
    throw std::logic_error("[DatasetLoader::iterate] the dataset's view of epoch " + std::to_string(epoch) + " has " +
                           std::to_string(plan->dataset->size()) + " examples, the dataset " +
                           std::to_string(dataset_->size()));
  }
  DistributedSampler sampler = sampler_;
  sampler.set_epoch(epoch);
  plan->order = sampler.indices();
  plan->batch_size = options_.batch_size();
  plan->num_batches = size();
  if (options_.pin_memory()) {
    // Decided per pass, not at construction: CUDA may load after the loader is made.
    BatchPinner pinner = pinner_ ? *pinner_ : BatchPinner();
    if (pinner.active()) plan->pinner = std::move(pinner);
  }
  if (options_.skip_bad_samples()) plan->bad_samples = bad_samples_;
  return plan;
}

void DatasetLoader::start_ahead_after(BatchIterator& pass, int64_t next_epoch) {
  // Only passes the consumer iterates are armed: a pass made ahead is armed
  // when it is taken, so small epochs do not chain passes ahead without end.
  static_cast<PooledIterator&>(pass).on_all_submitted(
      [this, alive = std::weak_ptr<const int>(alive_), next_epoch, generation = generation_] {
        if (!alive.lock() || generation != generation_) return;
        ahead_ = std::make_unique<PooledIterator>(plan(next_epoch), 0, persistent_pool_,
                                                  options_.num_workers() * options_.prefetch_factor(), false);
        ahead_epoch_ = next_epoch;
        ahead_generation_ = generation;
      });
}

std::unique_ptr<BatchIterator> DatasetLoader::iterate(int64_t first_batch) {
  const int64_t batches = size();
  if (first_batch < 0 || first_batch > batches) {
    throw std::out_of_range("[DatasetLoader::iterate] first_batch " + std::to_string(first_batch) + " is outside " +
                            range_text(0, batches));
  }
  // The pass the workers started ahead, if it is this one; else it is dropped.
  std::unique_ptr<BatchIterator> ahead = std::move(ahead_);
  const bool repeats = last_pass_epoch_ && *last_pass_epoch_ == epoch_;
  last_pass_epoch_ = epoch_;
  // Training loaders step the epoch, evaluation loaders repeat theirs.
  const int64_t next_epoch = repeats ? epoch_ : epoch_ + 1;
  if (ahead && first_batch == 0 && ahead_epoch_ == epoch_ && ahead_generation_ == generation_) {
    ++passes_started_ahead_;
    start_ahead_after(*ahead, next_epoch);
    return ahead;
  }
  ahead.reset();
  std::shared_ptr<const EpochPlan> plan = this->plan(epoch_);
  const int64_t workers = options_.num_workers();
  if (workers == 0) return std::make_unique<SerialIterator>(std::move(plan), first_batch);
  const int64_t window = workers * options_.prefetch_factor();
  if (options_.persistent_workers()) {
    if (!persistent_pool_) persistent_pool_ = std::make_shared<WorkerPool>(workers);
    std::unique_ptr<BatchIterator> iterator =
        std::make_unique<PooledIterator>(std::move(plan), first_batch, persistent_pool_, window, false);
    start_ahead_after(*iterator, next_epoch);
    return iterator;
  }
  // More threads than remaining batches would only idle.
  const int64_t threads = std::max<int64_t>(1, std::min(workers, batches - first_batch));
  return std::make_unique<PooledIterator>(std::move(plan), first_batch, std::make_shared<WorkerPool>(threads), window,
                                          true);
}

}  // namespace fulgur
