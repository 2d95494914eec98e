#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/datamodules/loading/bad_sample_log.hpp>
#include <fulgur/datamodules/loading/dataset.hpp>
#include <fulgur/datamodules/loading/distributed_sampler.hpp>

#include <torch/arg.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace fulgur {

class WorkerPool;

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
  /// Collate batches into page-locked memory so the copy to a CUDA device
  /// can be non_blocking (the Strategy copies pinned batches that way).
  /// Ignored when no CUDA device is available.
  TORCH_ARG(bool, pin_memory) = false;
  /// Keep the worker threads alive between epochs instead of starting
  /// num_workers threads for every iterate() (PyTorch's persistent_workers).
  TORCH_ARG(bool, persistent_workers) = false;
  /// A sample whose get() throws DataError (a corrupt or unreadable file) is
  /// logged once, counted (bad_samples()) and replaced in its batch by the
  /// next good sample of the dataset (index + 1, + 2, ... wrapping around),
  /// so batch sizes and the number of batches never change and every DDP
  /// rank runs the same number of steps. Off: the DataError stops the epoch.
  TORCH_ARG(bool, skip_bad_samples) = false;
};

/// The threaded loader over a Dataset. An epoch is the indices of its
/// DistributedSampler (all of them in order, or permuted by a generator
/// seeded with (seed + epoch) when shuffling; one rank's share once
/// shard() is called), cut into batches of batch_size. With workers, batch b is built
/// by worker (b - first) % num_workers and batches are returned strictly in
/// order, so the result does not depend on num_workers. An exception thrown
/// while building a batch (a corrupt image, say) is rethrown by next() when
/// that batch is due, and again by every later next() call.
class DatasetLoader : public DataLoader {
 public:
  DatasetLoader(std::shared_ptr<const Dataset> dataset, DatasetLoaderOptions options = {});

  int64_t size() const override;
  /// The epoch of the next iterate(): its shuffle order, and the dataset's
  /// at_epoch(epoch) view when it has one (per-epoch augmentation).
  void set_epoch(int64_t epoch) override { epoch_ = epoch; }
  /// Reads only this rank's share: the sampler becomes a DistributedSampler
  /// over (shard.num_replicas, shard.rank, shard.seed, shard.pad) with the
  /// loader's shuffle, PyTorch's DistributedSampler semantics.
  void shard(const Shard& shard) override;
  /// Replaces the dataset by its for_device(device) view when it has one.
  void set_device(const torch::Device& device) override;
  std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) override;

  /// Examples this rank gets per epoch.
  int64_t shard_examples() const;
  /// The dataset indices of the current epoch, in the order they are batched.
  std::vector<int64_t> epoch_order() const;

  int64_t epoch() const { return epoch_; }
  /// The options, with seed always set (resolved at construction).
  const DatasetLoaderOptions& options() const { return options_; }
  const std::shared_ptr<const Dataset>& dataset() const { return dataset_; }
  /// The sampler that orders (and shards) the indices; its epoch is set by
  /// set_epoch() before every iterate().
  const DistributedSampler& sampler() const { return sampler_; }
  /// The samples skipped so far with skip_bad_samples (shared by every
  /// iterator of this loader).
  const BadSampleLog& bad_samples() const { return *bad_samples_; }
  /// Records bad samples in `log` instead, so a DataModule that makes a new
  /// loader per call can count each bad file once across them.
  void share_bad_samples(std::shared_ptr<BadSampleLog> log) { bad_samples_ = std::move(log); }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DatasetLoaderOptions options_;
  DistributedSampler sampler_;
  int64_t epoch_ = 0;
  std::shared_ptr<BadSampleLog> bad_samples_ = std::make_shared<BadSampleLog>();
  std::shared_ptr<WorkerPool> persistent_pool_;  // with persistent_workers, made at the first iterate()
};

}  // namespace fulgur
