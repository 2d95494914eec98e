#pragma once

#include <fulgur/modules/batch.hpp>

#include <memory>
#include <optional>

namespace fulgur {

/// Yields the batches of one pass over a loader, in order. Destroying it
/// mid-epoch stops any background work it started.
class BatchIterator {
 public:
  virtual ~BatchIterator() = default;
  /// The next batch, or nullopt at the end of the epoch.
  virtual std::optional<Batch> next() = 0;
};

/// What the Trainer iterates: a fixed number of batches per epoch, reshuffled
/// deterministically by set_epoch(). Implementations: DatasetLoader (a Dataset
/// read by worker threads) and TensorBatchLoader (batches already in memory).
class DataLoader {
 public:
  virtual ~DataLoader() = default;
  /// Number of batches one epoch yields.
  virtual int64_t size() const = 0;
  /// Selects the epoch's order (shuffle seed is derived from it).
  virtual void set_epoch(int64_t epoch) { (void)epoch; }
  /// How a loader splits its data between processes.
  struct Shard {
    int64_t rank = 0;
    int64_t num_replicas = 1;
    /// The shuffle seed all ranks share, so their shares do not overlap.
    uint64_t seed = 0;
    /// Training: pad by repeating examples so every rank runs the same number
    /// of steps. Evaluation: no padding, so each example counts exactly once
    /// and a synced metric equals the one-process metric.
    bool pad = true;
  };
  /// Restricts the loader to this process's share of the data when several
  /// processes work together. Loaders that cannot shard (batches prepared
  /// by the user) say so (TensorBatchLoader warns once).
  virtual void shard(const Shard& shard) { (void)shard; }
  /// The device the batches are for (the Strategy's root device). The
  /// Trainer tells every loader before its first pass; a loader whose
  /// dataset prepares batches on the device (GPU decoding) uses it, the
  /// others ignore it. An own loop calls it the same way.
  virtual void set_device(const torch::Device& device) { (void)device; }
  /// Starts a pass over the current epoch at batch index `first_batch`.
  virtual std::unique_ptr<BatchIterator> iterate(int64_t first_batch = 0) = 0;
};

}  // namespace fulgur
