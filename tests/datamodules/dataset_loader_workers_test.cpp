// DatasetLoader's worker threads: persistence across epochs, shutdown with a
// full prefetch window, pinned memory fallback, and skipping bad samples.
#include "support/thread_snapshot.hpp"

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>

#include <torch/torch.h>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace dataset_loader_workers_test {

using fulgur::Batch;
using fulgur::DataError;
using fulgur::Dataset;
using fulgur::DatasetLoader;
using fulgur::DatasetLoaderOptions;
using fulgur::Example;

namespace {

/// Example i is [i] with target i; records the threads that built examples.
class ThreadRecordingDataset : public Dataset {
 public:
  explicit ThreadRecordingDataset(int64_t n, std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : n_(n), delay_(delay) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      threads_.insert(std::this_thread::get_id());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      gets.fetch_add(1);
    }
    got_.notify_all();
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    return {torch::full({1}, static_cast<float>(index)), fulgur::class_index(index), {}};
  }
  /// Waits until at least `n` examples were built (false after `timeout`).
  bool wait_for_gets(int64_t n, std::chrono::seconds timeout) const {
    std::unique_lock<std::mutex> lock(mutex_);
    return got_.wait_for(lock, timeout, [&] { return gets.load() >= n; });
  }
  std::set<std::thread::id> take_threads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto out = std::move(threads_);
    threads_.clear();
    return out;
  }
  mutable std::atomic<int64_t> gets{0};

 private:
  int64_t n_;
  std::chrono::milliseconds delay_;
  mutable std::mutex mutex_;
  mutable std::condition_variable got_;
  mutable std::set<std::thread::id> threads_;
};

/// Samples in `bad` throw DataError naming a fake file path, like a corrupt image.
class BadFilesDataset : public Dataset {
 public:
  BadFilesDataset(int64_t n, std::set<int64_t> bad) : n_(n), bad_(std::move(bad)) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    attempts.fetch_add(1);
    if (bad_.count(index)) throw DataError("[read_image] '/data/img" + std::to_string(index) + ".png' is truncated");
    return {torch::full({1}, static_cast<float>(index)), fulgur::class_index(index), {}};
  }
  mutable std::atomic<int64_t> attempts{0};

 private:
  int64_t n_;
  std::set<int64_t> bad_;
};

std::vector<int64_t> run_epoch(DatasetLoader& loader, int64_t epoch, std::vector<int64_t>* sizes = nullptr) {
  loader.set_epoch(epoch);
  std::vector<int64_t> targets;
  auto it = loader.iterate();
  while (auto batch = it->next()) {
    if (sizes) sizes->push_back(batch->size());
    for (int64_t i = 0; i < batch->size(); ++i) targets.push_back(batch->target[i].item<int64_t>());
  }
  return targets;
}

}  // namespace

TEST_CASE("DatasetLoader: persistent_workers keeps the same threads across epochs") {
  auto dataset = std::make_shared<ThreadRecordingDataset>(64, std::chrono::milliseconds(1));
  const fulgur::testing::ThreadSnapshot before;
  {
    DatasetLoader loader(dataset, DatasetLoaderOptions(4).num_workers(3).shuffle(true).seed(5).persistent_workers(true));
    const auto first = run_epoch(loader, 0);
    const auto first_threads = dataset->take_threads();
    CHECK(before.new_threads(3) == 3);  // the pool outlives the epoch's iterator
    const auto second = run_epoch(loader, 1);
    const auto second_threads = dataset->take_threads();
    CHECK(first.size() == 64);
    CHECK(first != second);  // a new epoch, a new order
    CHECK(first_threads.size() <= 3);
    for (const auto& id : second_threads) CHECK(first_threads.count(id) == 1);
    // Same batches as with fresh threads per epoch.
    DatasetLoader fresh(dataset, DatasetLoaderOptions(4).num_workers(3).shuffle(true).seed(5));
    CHECK(run_epoch(fresh, 1) == second);
    CHECK(before.new_threads(3) == 3);  // fresh's threads ended with its iterator
  }
  CHECK(before.new_threads() == 0);  // the loader joined its pool
}

TEST_CASE("DatasetLoader: persistent workers start the next pass's batches behind this pass's last ones") {
  auto dataset = std::make_shared<ThreadRecordingDataset>(40);
  const auto options = DatasetLoaderOptions(4).num_workers(2).prefetch_factor(2).shuffle(true).seed(5);
  DatasetLoader fresh(dataset, options);
  const auto epoch = [&](int64_t e) { return run_epoch(fresh, e); };
  const auto wait_for_gets = [&](int64_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (dataset->gets.load() < want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return dataset->gets.load();
  };

  DatasetLoader loader(dataset, DatasetLoaderOptions(options).persistent_workers(true));
  dataset->gets = 0;
  CHECK(run_epoch(loader, 0) == epoch(0));
  dataset->gets -= 40;  // fresh's epoch
  // Epoch 0's 10 batches, then epoch 1's first window (2 workers x 2) ahead, and no more.
  CHECK(wait_for_gets(40 + 4 * 4) == 40 + 4 * 4);
  CHECK(run_epoch(loader, 1) == epoch(1));
  CHECK(loader.passes_started_ahead() == 1);
  CHECK(run_epoch(loader, 2) == epoch(2));
  CHECK(loader.passes_started_ahead() == 2);
  // Not the epoch the workers guessed (3): dropped, the right batches all the same.
  CHECK(run_epoch(loader, 7) == epoch(7));
  CHECK(loader.passes_started_ahead() == 2);
  // A resumed pass starts at its batch, not at the batches made ahead.
  loader.set_epoch(8);
  auto resumed = loader.iterate(3);
  CHECK(resumed->next()->target[0].item<int64_t>() == epoch(8)[12]);
  resumed.reset();
  CHECK(loader.passes_started_ahead() == 2);
  // A loader whose epoch stays (validation) is guessed to stay after two passes.
  DatasetLoader validation(dataset, DatasetLoaderOptions(4).num_workers(2).seed(1).persistent_workers(true));
  for (int pass = 0; pass < 4; ++pass) CHECK(run_epoch(validation, 0).size() == 40);
  CHECK(validation.passes_started_ahead() == 2);
  // A new shard is a new loader shape: what was made ahead is dropped.
  run_epoch(loader, 9);
  loader.shard({1, 2, 5, true});
  loader.set_epoch(10);
  auto sharded = loader.iterate();
  int64_t count = 0;
  while (auto batch = sharded->next()) count += batch->size();
  CHECK(count == 20);
  CHECK(loader.passes_started_ahead() == 2);
}

TEST_CASE("DatasetLoader: destroying an iterator whose prefetch window is full returns at once and leaks no thread") {
  for (const bool persistent : {false, true}) {
    CAPTURE(persistent);
    auto dataset = std::make_shared<ThreadRecordingDataset>(100000);
    const fulgur::testing::ThreadSnapshot before;
    {
      DatasetLoader loader(dataset, DatasetLoaderOptions(2).num_workers(4).prefetch_factor(2).persistent_workers(persistent));
      auto it = loader.iterate();
      REQUIRE(it->next().has_value());
      // The workers fill the whole window (8 batches ahead), an event the dataset reports.
      REQUIRE(dataset->wait_for_gets((1 + 8) * 2, std::chrono::seconds(20)));
      CHECK(before.new_threads(4) == 4);
      const auto start = std::chrono::steady_clock::now();
      it.reset();
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
      // The workers are joined (or parked, persistent): what they built is final, and bounded by the window.
      CHECK(dataset->gets.load() == (1 + 8) * 2);
      CHECK(before.new_threads(persistent ? 4 : 0) == (persistent ? 4 : 0));
    }
    CHECK(before.new_threads() == 0);
  }
}

TEST_CASE("DatasetLoader: pin_memory without CUDA falls back to ordinary CPU batches") {
  auto dataset = std::make_shared<ThreadRecordingDataset>(10);
  DatasetLoader pinned(dataset, DatasetLoaderOptions(4).num_workers(2).pin_memory(true).seed(0));
  DatasetLoader plain(dataset, DatasetLoaderOptions(4).num_workers(2).seed(0));
  auto a = pinned.iterate();
  auto b = plain.iterate();
  while (auto batch = a->next()) {
    const auto other = b->next();
    REQUIRE(other.has_value());
    CHECK(torch::equal(batch->input, other->input));
    CHECK(batch->input.device().is_cpu());
    // Pinned exactly when a CUDA device exists to copy to.
    CHECK(batch->input.is_pinned() == torch::cuda::is_available());
  }
}

TEST_CASE("DatasetLoader: skip_bad_samples replaces bad samples, logs each once and keeps the batch count") {
  auto dataset = std::make_shared<BadFilesDataset>(20, std::set<int64_t>{3, 4, 19});
  for (const int64_t workers : {0, 2}) {
    CAPTURE(workers);
    DatasetLoader loader(dataset, DatasetLoaderOptions(4).num_workers(workers).skip_bad_samples(true).seed(0));
    std::vector<int64_t> sizes;
    const auto epoch0 = run_epoch(loader, 0, &sizes);
    CHECK(sizes == std::vector<int64_t>{4, 4, 4, 4, 4});  // same batches, same sizes
    // 3 and 4 are replaced by the next good sample (5); 19 wraps around to 0.
    CHECK(epoch0 == std::vector<int64_t>{0, 1, 2, 5, 5, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0});
    CHECK(loader.bad_samples().count() == 3);
    CHECK(loader.bad_samples().reason(19) == "[read_image] '/data/img19.png' is truncated");
    // A second epoch does not read the known-bad files again.
    const int64_t attempts = dataset->attempts.load();
    CHECK(run_epoch(loader, 1) == epoch0);
    CHECK(dataset->attempts.load() - attempts == 20 - 3 + 3);  // 17 good + 3 replacements
    CHECK(loader.bad_samples().count() == 3);
    dataset->attempts.store(0);
  }
  // Without the option the first bad file stops the epoch, naming its path.
  DatasetLoader strict(dataset, DatasetLoaderOptions(4).num_workers(2).seed(0));
  auto it = strict.iterate();
  CHECK_THROWS_WITH_AS(it->next(), "[read_image] '/data/img3.png' is truncated", DataError);
}

TEST_CASE("DatasetLoader: skip_bad_samples fails clearly when every sample is bad") {
  auto dataset = std::make_shared<BadFilesDataset>(3, std::set<int64_t>{0, 1, 2});
  DatasetLoader loader(dataset, DatasetLoaderOptions(2).skip_bad_samples(true).seed(0));
  auto it = loader.iterate();
  CHECK_THROWS_WITH_AS(it->next(),
                       "[DatasetLoader] skip_bad_samples: every one of the 3 samples is bad; the first: [read_image] "
                       "'/data/img0.png' is truncated",
                       DataError);
}

TEST_CASE("DatasetLoader: shard uses DistributedSampler; the loader's order equals the sampler's") {
  auto dataset = std::make_shared<ThreadRecordingDataset>(23);
  DatasetLoader loader(dataset, DatasetLoaderOptions(5).shuffle(true).seed(3).num_workers(2));
  fulgur::DataLoader::Shard shard;
  shard.rank = 1;
  shard.num_replicas = 3;
  shard.seed = 1234;
  shard.pad = true;
  loader.shard(shard);
  fulgur::DistributedSampler sampler(
      23, fulgur::DistributedSamplerOptions().num_replicas(3).rank(1).shuffle(true).seed(1234));
  sampler.set_epoch(4);
  CHECK(run_epoch(loader, 4) == sampler.indices());
  CHECK(loader.size() == 2);  // 8 examples in batches of 5
}

}  // namespace dataset_loader_workers_test
