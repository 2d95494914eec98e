#pragma once

#include <fulgur/datamodules/data_loader.hpp>
#include <fulgur/datamodules/loading/bad_sample_log.hpp>
#include <fulgur/datamodules/loading/batch_pinner.hpp>
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
  /// Only CPU tensors are pinned: a batch a dataset already put on a device
  /// (GPU decoding) passes as it is. Ignored when no CUDA device is available.
  TORCH_ARG(bool, pin_memory) = false;
  /// Keep the worker threads alive between epochs instead of starting
  /// num_workers threads for every iterate() (PyTorch's persistent_workers),
  /// and keep them busy across the epoch boundary: once the last batch of a
  /// pass is queued, the first batches of the next pass (the next epoch; the
  /// same one for a loader whose epoch does not change, as validation's)
  /// are queued behind it. The next iterate() takes them when it is that
  /// pass from its first batch, on an unchanged loader; otherwise they are
  /// dropped. At the boundary up to twice num_workers * prefetch_factor
  /// batches exist.
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

  /// What the iterators of one pass share (defined in the .cpp).
  struct EpochPlan;

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
  /// Passes that began with batches the workers had started during the
  /// previous pass (persistent_workers).
  int64_t passes_started_ahead() const { return passes_started_ahead_; }
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
  void share_bad_samples(std::shared_ptr<BadSampleLog> log) {
    bad_samples_ = std::move(log);
    ++generation_;
  }
  /// How pin_memory pins (default: BatchPinner(), LibTorch's pin_memory of
  /// the CPU tensors when CUDA is available); a test passes one that runs
  /// without a GPU.
  void set_pinner(BatchPinner pinner) {
    pinner_ = std::move(pinner);
    ++generation_;
  }

 private:
  /// The plan of one pass over `epoch`.
  std::shared_ptr<const EpochPlan> plan(int64_t epoch) const;
  /// With persistent workers: once `pass` (a pass of the pool) has queued
  /// its last batch, queue the first batches of `next_epoch`'s pass (ahead_).
  void start_ahead_after(BatchIterator& pass, int64_t next_epoch);

  std::shared_ptr<const Dataset> dataset_;
  DatasetLoaderOptions options_;
  DistributedSampler sampler_;
  int64_t epoch_ = 0;
  std::shared_ptr<BadSampleLog> bad_samples_ = std::make_shared<BadSampleLog>();
  std::optional<BatchPinner> pinner_;
  std::shared_ptr<WorkerPool> persistent_pool_;  // with persistent_workers, made at the first iterate()
  // The pass started ahead by the persistent workers, valid for ahead_epoch_
  // while nothing that shapes a pass changed (generation_ counts changes).
  std::optional<int64_t> last_pass_epoch_;
  int64_t generation_ = 0;
  int64_t ahead_epoch_ = 0;
  int64_t ahead_generation_ = -1;
  int64_t passes_started_ahead_ = 0;
  std::shared_ptr<const int> alive_ = std::make_shared<const int>(0);  // the hooks' check that the loader lives
  std::unique_ptr<BatchIterator> ahead_;  // destroyed before the pool its tasks run on
};

}  // namespace fulgur
