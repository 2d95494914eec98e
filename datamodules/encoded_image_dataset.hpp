#pragma once

#include <fulgur/datamodules/dataset.hpp>
#include <fulgur/datamodules/encoded_image_source.hpp>

#include <functional>
#include <memory>

namespace fulgur {

/// Maps a decoded image (uint8 [height, width, 3] RGB) to the model input,
/// drawing any randomness from `generator`, which the dataset seeds per
/// sample with sample_seed(seed, epoch, index). Called concurrently from
/// loader threads, so it must not mutate shared state.
using RandomImageTransform = std::function<torch::Tensor(torch::Tensor image_hwc_uint8, torch::Generator& generator)>;

/// Decodes the images of an EncodedImageSource (files or an HDF5 pack) and
/// transforms them. Sample i of epoch e gets a generator seeded with
/// sample_seed(seed, e, i) — a function of the sample, not of the worker
/// thread or the rank that reads it. That is stronger than PyTorch's
/// per-worker seeding (seed + worker id): the augmentation of every sample
/// is the same for any num_workers, any batch size, any world size (each
/// dataset index is read by exactly one rank per epoch), and when a run is
/// resumed mid-epoch. at_epoch() gives the same dataset with another epoch.
class EncodedImageDataset : public Dataset {
 public:
  /// `transform` defaults to to_float_chw (float [3, H, W] in [0, 1]).
  EncodedImageDataset(std::shared_ptr<const EncodedImageSource> source, RandomImageTransform transform = {},
                      uint64_t seed = 0, int64_t epoch = 0);

  int64_t size() const override { return source_->size(); }
  /// Reads, decodes and transforms image `index`; every failure is a
  /// DataError naming the image (its path, or pack:name).
  Example get(int64_t index) const override;
  /// This dataset's images for `epoch` (sharing the source).
  std::shared_ptr<const EncodedImageDataset> at_epoch(int64_t epoch) const;

  const std::shared_ptr<const EncodedImageSource>& source() const { return source_; }
  int64_t epoch() const { return epoch_; }

 private:
  std::shared_ptr<const EncodedImageSource> source_;
  RandomImageTransform transform_;
  uint64_t seed_;
  int64_t epoch_;
};

}  // namespace fulgur
