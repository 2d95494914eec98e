#pragma once

#include <fulgur/datamodules/loading/example.hpp>
#include <fulgur/modules/batch.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace fulgur {

/// A random-access collection of examples, the unit a DatasetLoader reads.
/// get() and get_batch() are const and are called from several worker
/// threads at once, so an implementation must not mutate shared state in
/// them (or must guard it). Indices are always in [0, size()).
class Dataset {
 public:
  virtual ~Dataset() = default;

  /// Number of examples.
  virtual int64_t size() const = 0;
  /// The example at `index`.
  virtual Example get(int64_t index) const = 0;
  /// The examples at `indices` collated into one batch. Override it when a
  /// dataset can gather a batch faster than one get() per sample.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
  /// Joins examples into a batch: inputs, targets and every named tensor
  /// stacked along a new first dimension (0-d class indices become an int64
  /// vector; each target keeps its dtype). Override it for
  /// examples of different shapes (e.g. pad variable-length sequences with
  /// pad_sequences); the loaders call it for every batch.
  virtual Batch collate(std::vector<Example> examples) const;
  /// For datasets whose samples depend on the epoch (random augmentation,
  /// ImageDataset): the same examples as they are in `epoch`. The loader
  /// reads at_epoch(epoch) for each pass (DatasetLoader::set_epoch), so a
  /// later set_epoch() cannot change batches an earlier pass still builds.
  /// Default: null, the examples are the same in every epoch.
  virtual std::shared_ptr<const Dataset> at_epoch(int64_t epoch) const {
    (void)epoch;
    return nullptr;
  }
  /// For datasets that make their batches on the device the run trains on
  /// (ImageDataset with `decode: gpu | auto`): the same examples made for
  /// `device`. The loader asks when it learns the device
  /// (DataLoader::set_device). Default: null, the examples do not depend
  /// on the device (the Strategy copies each batch there).
  virtual std::shared_ptr<const Dataset> for_device(const torch::Device& device) const {
    (void)device;
    return nullptr;
  }
  /// Called by the loader when a pass over epoch `epoch` has returned its
  /// last batch (not when it is abandoned mid-epoch), from the thread that
  /// iterates, on the view the pass read (at_epoch). A dataset that counts
  /// per epoch reports there (DeviceDecodeDataset: one line of decode
  /// engine counts). Default: nothing.
  virtual void finished_epoch(int64_t epoch) const { (void)epoch; }
};

}  // namespace fulgur
