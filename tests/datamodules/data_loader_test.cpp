#include "support/thread_snapshot.hpp"

#include <fulgur/datamodules/data_error.hpp>
#include <fulgur/datamodules/loading/dataset_loader.hpp>
#include <fulgur/datamodules/loading/tensor_batch_loader.hpp>
#include <fulgur/datamodules/datasets/tensor_dataset.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>

#include <doctest/doctest.h>

namespace data_loader_test {

using fulgur::Batch;
using fulgur::DataError;
using fulgur::Dataset;
using fulgur::DatasetLoader;
using fulgur::DatasetLoaderOptions;
using fulgur::Example;

namespace {

/// Example i has input [i] and target i, so batches show which indices they hold.
class IndexDataset : public Dataset {
 public:
  explicit IndexDataset(int64_t n) : n_(n) {}
  int64_t size() const override { return n_; }
  Example get(int64_t index) const override {
    return {torch::full({1}, static_cast<float>(index)), fulgur::class_index(index), {}};
  }

 private:
  int64_t n_;
};

/// Throws a DataError for one index, as a corrupt image would.
class FailingDataset : public IndexDataset {
 public:
  FailingDataset(int64_t n, int64_t bad) : IndexDataset(n), bad_(bad) {}
  Example get(int64_t index) const override {
    if (index == bad_) throw DataError("[FailingDataset::get] sample " + std::to_string(index) + " is corrupt");
    return IndexDataset::get(index);
  }

 private:
  int64_t bad_;
};

/// Slow, and counts its gets, so a test can see when workers stop.
class SlowDataset : public IndexDataset {
 public:
  SlowDataset(int64_t n, std::chrono::milliseconds delay) : IndexDataset(n), delay_(delay) {}
  Example get(int64_t index) const override {
    gets.fetch_add(1);
    std::this_thread::sleep_for(delay_);
    return IndexDataset::get(index);
  }
  mutable std::atomic<int64_t> gets{0};

 private:
  std::chrono::milliseconds delay_;
};

/// Records how far ahead of the consumer the workers read and how many gets
/// run at once. `consumed` is the number of batches the test has taken.
class WatchedDataset : public IndexDataset {
 public:
  WatchedDataset(int64_t n, int64_t batch_size) : IndexDataset(n), batch_size_(batch_size) {}
  Example get(int64_t index) const override {
    const int64_t now = in_flight.fetch_add(1) + 1;
    update_max(max_in_flight, now);
    update_max(max_ahead, index / batch_size_ - consumed.load());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    in_flight.fetch_sub(1);
    return IndexDataset::get(index);
  }
  mutable std::atomic<int64_t> consumed{0};
  mutable std::atomic<int64_t> in_flight{0};
  mutable std::atomic<int64_t> max_in_flight{0};
  mutable std::atomic<int64_t> max_ahead{-1000};

 private:
  static void update_max(std::atomic<int64_t>& target, int64_t value) {
    int64_t seen = target.load();
    while (value > seen && !target.compare_exchange_weak(seen, value)) {
    }
  }
  int64_t batch_size_;
};

std::vector<Batch> collect(fulgur::DataLoader& loader, int64_t first = 0) {
  std::vector<Batch> batches;
  auto it = loader.iterate(first);
  while (auto batch = it->next()) batches.push_back(std::move(*batch));
  return batches;
}

std::vector<int64_t> targets_of(const std::vector<Batch>& batches) {
  std::vector<int64_t> out;
  for (const auto& batch : batches) {
    for (int64_t i = 0; i < batch.target.size(0); ++i) out.push_back(batch.target[i].item<int64_t>());
  }
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), 0);
  return out;
}

}  // namespace

TEST_CASE("DatasetLoader: sequential order, batch sizes and drop_last") {
  auto dataset = std::make_shared<IndexDataset>(10);
  DatasetLoader loader(dataset, DatasetLoaderOptions(3));
  CHECK(loader.size() == 4);
  auto batches = collect(loader);
  REQUIRE(batches.size() == 4);
  CHECK(batches[0].input.sizes() == torch::IntArrayRef({3, 1}));
  CHECK((batches[0].target.scalar_type() == torch::kLong));
  CHECK(batches[3].size() == 1);
  CHECK(targets_of(batches) == iota(10));
  CHECK(batches[2].input[1].item<float>() == 7.0f);

  DatasetLoader dropping(dataset, DatasetLoaderOptions(3).drop_last(true));
  CHECK(dropping.size() == 3);
  auto kept = collect(dropping);
  REQUIRE(kept.size() == 3);
  CHECK(kept.back().size() == 3);
  CHECK(targets_of(kept) == iota(9));

  DatasetLoader exact(dataset, DatasetLoaderOptions(5).drop_last(true));
  CHECK(exact.size() == 2);
  DatasetLoader empty(std::make_shared<IndexDataset>(0), DatasetLoaderOptions(4).num_workers(2));
  CHECK(empty.size() == 0);
  CHECK_FALSE(empty.iterate()->next().has_value());
}

TEST_CASE("DatasetLoader: shuffle is a permutation fixed by seed and epoch") {
  auto dataset = std::make_shared<IndexDataset>(50);
  DatasetLoader loader(dataset, DatasetLoaderOptions(8).shuffle(true).seed(7));
  const auto epoch0 = targets_of(collect(loader));
  CHECK(epoch0 != iota(50));
  auto sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == iota(50));
  CHECK(targets_of(collect(loader)) == epoch0);
  CHECK(loader.epoch_order() == epoch0);

  loader.set_epoch(1);
  const auto epoch1 = targets_of(collect(loader));
  CHECK(epoch1 != epoch0);
  loader.set_epoch(0);
  CHECK(targets_of(collect(loader)) == epoch0);

  // A fresh loader with the same seed reproduces every epoch.
  DatasetLoader twin(dataset, DatasetLoaderOptions(8).shuffle(true).seed(7));
  twin.set_epoch(1);
  CHECK(targets_of(collect(twin)) == epoch1);
  DatasetLoader other(dataset, DatasetLoaderOptions(8).shuffle(true).seed(8));
  CHECK(targets_of(collect(other)) != epoch0);
}

TEST_CASE("DatasetLoader: an unset seed is drawn from torch's default generator") {
  auto dataset = std::make_shared<IndexDataset>(40);
  const auto options = DatasetLoaderOptions(4).shuffle(true);
  torch::manual_seed(123);
  DatasetLoader a(dataset, options);
  torch::manual_seed(123);
  DatasetLoader b(dataset, options);
  torch::manual_seed(124);
  DatasetLoader c(dataset, options);
  REQUIRE(a.options().seed().has_value());
  CHECK(a.options().seed() == b.options().seed());
  CHECK(a.options().seed() != c.options().seed());
  CHECK(targets_of(collect(a)) == targets_of(collect(b)));
  CHECK(targets_of(collect(a)) != targets_of(collect(c)));
}

TEST_CASE("DatasetLoader: num_workers 0 and 3 yield identical batches") {
  auto dataset = std::make_shared<IndexDataset>(103);
  auto options = DatasetLoaderOptions(4).shuffle(true).seed(5);
  DatasetLoader serial(dataset, options);
  serial.set_epoch(2);
  const auto expected = collect(serial);
  REQUIRE(expected.size() == 26);
  for (const int64_t prefetch : {1, 2, 5}) {
    CAPTURE(prefetch);
    DatasetLoader threaded(dataset, options.num_workers(3).prefetch_factor(prefetch));
    threaded.set_epoch(2);
    const auto got = collect(threaded);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CHECK(torch::equal(got[i].input, expected[i].input));
      CHECK(torch::equal(got[i].target, expected[i].target));
    }
  }
  // More workers than batches.
  DatasetLoader wide(std::make_shared<IndexDataset>(5), DatasetLoaderOptions(2).num_workers(8));
  CHECK(targets_of(collect(wide)) == iota(5));
}

TEST_CASE("DatasetLoader: iterate(first_batch) starts at that batch") {
  auto dataset = std::make_shared<IndexDataset>(20);
  for (const int64_t workers : {0, 3}) {
    CAPTURE(workers);
    DatasetLoader loader(dataset, DatasetLoaderOptions(6).shuffle(true).seed(3).num_workers(workers));
    const auto all = targets_of(collect(loader));
    const auto tail = collect(loader, 2);
    REQUIRE(tail.size() == 2);
    CHECK(targets_of(tail) == std::vector<int64_t>(all.begin() + 12, all.end()));
    CHECK_FALSE(loader.iterate(4)->next().has_value());
    CHECK_THROWS_WITH_AS(loader.iterate(5), "[DatasetLoader::iterate] first_batch 5 is outside [0, 4]",
                         std::out_of_range);
    CHECK_THROWS_WITH_AS(loader.iterate(-1), "[DatasetLoader::iterate] first_batch -1 is outside [0, 4]",
                         std::out_of_range);
  }
}

TEST_CASE("DatasetLoader: options are validated at construction") {
  auto dataset = std::make_shared<IndexDataset>(4);
  CHECK_THROWS_WITH_AS(DatasetLoader(dataset, DatasetLoaderOptions(0)),
                       "[DatasetLoader::DatasetLoader] batch_size must be >= 1, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DatasetLoader(dataset, DatasetLoaderOptions(2).num_workers(-1)),
                       "[DatasetLoader::DatasetLoader] num_workers must be >= 0, got -1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DatasetLoader(dataset, DatasetLoaderOptions(2).num_workers(2).prefetch_factor(0)),
                       "[DatasetLoader::DatasetLoader] prefetch_factor must be >= 1, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(DatasetLoader(nullptr, DatasetLoaderOptions(2)), "[DatasetLoader::DatasetLoader] dataset is null",
                       std::invalid_argument);
}

TEST_CASE("DatasetLoader: an exception in a worker surfaces in next() with its message") {
  auto dataset = std::make_shared<FailingDataset>(40, 13);
  for (const int64_t workers : {0, 1, 3}) {
    CAPTURE(workers);
    DatasetLoader loader(dataset, DatasetLoaderOptions(4).num_workers(workers));
    auto it = loader.iterate();
    for (int i = 0; i < 3; ++i) REQUIRE(it->next().has_value());  // batches 0-2 hold 0..11
    CHECK_THROWS_WITH_AS(it->next(), "[FailingDataset::get] sample 13 is corrupt", DataError);
    // The iterator stays failed rather than skipping the bad batch silently.
    CHECK_THROWS_WITH_AS(it->next(), "[FailingDataset::get] sample 13 is corrupt", DataError);
  }
}

TEST_CASE("DatasetLoader: destroying an iterator mid-epoch stops its workers promptly") {
  auto dataset = std::make_shared<SlowDataset>(100000, std::chrono::milliseconds(5));
  DatasetLoader loader(dataset, DatasetLoaderOptions(2).num_workers(4).prefetch_factor(2));
  const fulgur::testing::ThreadSnapshot threads_before;
  auto it = loader.iterate();
  REQUIRE(it->next().has_value());
  REQUIRE(it->next().has_value());
  const auto start = std::chrono::steady_clock::now();
  it.reset();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  // At most one batch (2 x 5 ms) in progress per worker remains to finish.
  CHECK(elapsed < std::chrono::seconds(2));
  // Every worker was joined: none is still running.
  CHECK(threads_before.new_threads() == 0);
  const int64_t gets_after_join = dataset->gets.load();
  CHECK(gets_after_join <= (2 + 4 * 2 + 4) * 2);  // and none read far ahead
}

TEST_CASE("DatasetLoader: workers read at most num_workers * prefetch_factor batches ahead") {
  const int64_t batch_size = 2, workers = 3, prefetch = 2;
  auto dataset = std::make_shared<WatchedDataset>(300, batch_size);
  DatasetLoader loader(dataset, DatasetLoaderOptions(batch_size).num_workers(workers).prefetch_factor(prefetch));
  auto it = loader.iterate();
  int64_t count = 0;
  while (auto batch = it->next()) {
    dataset->consumed.store(++count);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow consumer lets workers run ahead
  }
  CHECK(count == 150);
  // Batch b may start once the consumer has taken batch b - window, so it is
  // at most `window` batches past the count of batches the test has taken.
  CHECK(dataset->max_ahead.load() <= workers * prefetch);
  CHECK(dataset->max_ahead.load() >= 2);  // prefetching does happen
  CHECK(dataset->max_in_flight.load() <= workers);
}

TEST_CASE("TensorDataset: rows are examples; get_batch gathers with index_select") {
  const auto inputs = torch::arange(12, torch::kFloat32).view({6, 2});
  const auto targets = torch::tensor({5, 4, 3, 2, 1, 0}, torch::kLong);
  auto dataset = std::make_shared<fulgur::TensorDataset>(inputs, targets);
  CHECK(dataset->size() == 6);
  const Example e = dataset->get(2);
  CHECK(torch::equal(e.input, torch::tensor({4.0f, 5.0f})));
  CHECK(e.target.item<int64_t>() == 3);
  const Batch b = dataset->get_batch({4, 0});
  CHECK(torch::equal(b.input, torch::tensor({{8.0f, 9.0f}, {0.0f, 1.0f}})));
  CHECK(torch::equal(b.target, torch::tensor({1, 5}, torch::kLong)));
  CHECK_THROWS_WITH_AS(dataset->get(6), "[TensorDataset::get] index 6 is outside [0, 6)", std::out_of_range);
  CHECK_THROWS_WITH_AS(dataset->get_batch({1, -1}), "[TensorDataset::get_batch] index -1 is outside [0, 6)",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(fulgur::TensorDataset(torch::zeros({4, 2}), torch::zeros({3})),
                       "[TensorDataset::TensorDataset] inputs have 4 rows but targets have 3; both need one row per example",
                       std::invalid_argument);

  DatasetLoader loader(dataset, DatasetLoaderOptions(4).num_workers(2));
  const auto batches = collect(loader);
  REQUIRE(batches.size() == 2);
  CHECK(torch::equal(torch::cat({batches[0].input, batches[1].input}), inputs));
  CHECK(torch::equal(torch::cat({batches[0].target, batches[1].target}), targets));
}

TEST_CASE("Dataset: the default get_batch stacks examples and names mismatched shapes") {
  class Ragged : public Dataset {
   public:
    int64_t size() const override { return 3; }
    Example get(int64_t index) const override { return {torch::zeros({index == 2 ? 3 : 2, 2}), fulgur::class_index(index), {}}; }
  };
  Ragged ragged;
  const Batch ok = ragged.get_batch({0, 1});
  CHECK(ok.input.sizes() == torch::IntArrayRef({2, 2, 2}));
  CHECK(torch::equal(ok.target, torch::tensor({0, 1}, torch::kLong)));
  CHECK_THROWS_WITH_AS(ragged.get_batch({0, 2}),
                       "[Dataset::collate] example 1 of the batch has input shape [3, 2] but example 0 has [2, 2]; "
                       "all inputs of a batch must have the same shape (or override Dataset::collate, e.g. with "
                       "pad_sequences)",
                       DataError);
}

TEST_CASE("TensorBatchLoader: yields the stored batches in order without copying") {
  std::vector<Batch> batches;
  for (int i = 0; i < 3; ++i) batches.push_back({torch::full({2, 2}, i), torch::full({2}, i, torch::kLong)});
  const void* first_data = batches[0].input.data_ptr();
  fulgur::TensorBatchLoader loader(batches);
  CHECK(loader.size() == 3);
  for (int epoch = 0; epoch < 2; ++epoch) {
    loader.set_epoch(epoch);
    const auto got = collect(loader);
    REQUIRE(got.size() == 3);
    CHECK(got[0].input.data_ptr() == first_data);
    CHECK(got[2].target[0].item<int64_t>() == 2);
  }
  const auto tail = collect(loader, 2);
  REQUIRE(tail.size() == 1);
  CHECK(tail[0].input[0][0].item<float>() == 2.0f);
  CHECK_THROWS_WITH_AS(loader.iterate(4), "[TensorBatchLoader::iterate] first_batch 4 is outside [0, 3]",
                       std::out_of_range);
}

TEST_CASE("DatasetLoader: shards follow DistributedSampler, padded for training only") {
  auto dataset = std::make_shared<fulgur::TensorDataset>(torch::arange(10).to(torch::kFloat32).unsqueeze(1),
                                                         torch::arange(10));
  auto indices_of = [&](int64_t rank, bool pad, bool shuffle) {
    fulgur::DatasetLoader loader(dataset, fulgur::DatasetLoaderOptions(2).shuffle(shuffle).seed(1));
    fulgur::DataLoader::Shard shard;
    shard.rank = rank;
    shard.num_replicas = 3;
    shard.seed = 99;
    shard.pad = pad;
    loader.shard(shard);
    std::vector<int64_t> seen;
    auto batches = loader.iterate(0);
    while (auto batch = batches->next()) {
      for (int64_t i = 0; i < batch->target.size(0); ++i) seen.push_back(batch->target[i].item<int64_t>());
    }
    CHECK(static_cast<int64_t>(seen.size()) == loader.shard_examples());
    return seen;
  };
  // Padded: 10 -> 12 examples, ranks take every third; 0 and 1 appear twice.
  CHECK(indices_of(0, true, false) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(indices_of(1, true, false) == std::vector<int64_t>{1, 4, 7, 0});
  CHECK(indices_of(2, true, false) == std::vector<int64_t>{2, 5, 8, 1});
  // Unpadded: 4 + 3 + 3, every example exactly once.
  CHECK(indices_of(0, false, false) == std::vector<int64_t>{0, 3, 6, 9});
  CHECK(indices_of(1, false, false) == std::vector<int64_t>{1, 4, 7});
  CHECK(indices_of(2, false, false) == std::vector<int64_t>{2, 5, 8});
  // Shuffled with the shared seed: the ranks' shares still partition the data.
  std::vector<int64_t> all;
  for (int64_t r = 0; r < 3; ++r) {
    const auto part = indices_of(r, false, true);
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(all == expected);
}

}  // namespace data_loader_test
