#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/datamodules/dataset.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace fulgur {

/// Options of a DatasetLoader, with chainable setters in the
/// torch::data::DataLoaderOptions style:
/// `DatasetLoaderOptions(64).shuffle(true).num_workers(4)`.
/// DatasetLoader validates them when it is constructed.
struct DatasetLoaderOptions {
  DatasetLoaderOptions() = default;
  explicit DatasetLoaderOptions(int64_t batch_size) : batch_size_(batch_size) {}

  /// Examples per batch (>= 1).
  TORCH_ARG(int64_t, batch_size) = 1;
  /// Reorder the examples every epoch (a permutation seeded by seed + epoch).
  TORCH_ARG(bool, shuffle) = false;
  /// Drop the last batch if it is smaller than batch_size.
  TORCH_ARG(bool, drop_last) = false;
  /// Threads that build batches ahead of the consumer; 0 builds them in the
  /// thread that calls next().
  TORCH_ARG(int64_t, num_workers) = 0;
  /// Batches each worker may have ready or in progress ahead of the consumer
  /// (>= 1); memory is bounded by num_workers * prefetch_factor batches.
  TORCH_ARG(int64_t, prefetch_factor) = 2;
  /// Base of the shuffle seed. Unset: drawn from torch's default CPU
  /// generator when the loader is constructed, so torch::manual_seed makes
  /// runs reproducible.
  TORCH_ARG(std::optional<uint64_t>, seed) = std::nullopt;
};

/// The threaded loader over a Dataset. An epoch is the dataset's indices in
/// order, or permuted by a generator seeded with (seed + epoch) when
/// shuffling, cut into batches of batch_size. With workers, batch b is built
/// by worker (b - first) % num_workers and batches are returned strictly in
/// order, so the result does not depend on num_workers. An exception thrown
/// while building a batch (a corrupt image, say) is rethrown by next() when
/// that batch is due, and again by every later next() call.
class DatasetLoader : public DataLoader {
 public:
  DatasetLoader(std::shared_ptr<const Dataset> dataset, DatasetLoaderOptions options = {});

  int64_t size() const override;
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  /// Keeps every num_replicas-th example of the epoch's order (shuffled with
  /// the shared seed), from `rank`: PyTorch's DistributedSampler. With `pad`
  /// the order is padded by repeating its start so every rank gets
  /// ceil(n / num_replicas) examples; without, ranks get n / num_replicas or
  /// one more, and no example is seen twice.
  void shard(const Shard& shard) override;
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;

  /// Examples this rank gets per epoch.
  int64_t shard_examples() const;
  /// The dataset indices of the current epoch, in the order they are batched.
  std::vector<int64_t> epoch_order() const;

  int64_t epoch() const { return epoch_; }
  /// The options, with seed always set (resolved at construction).
  const DatasetLoaderOptions& options() const { return options_; }
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DatasetLoaderOptions options_;
  int64_t num_examples_ = 0;
  int64_t epoch_ = 0;
  Shard shard_;
};

}  // namespace fulgur
