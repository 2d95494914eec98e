#pragma once

#include <fulgur/datamodules/compose.hpp>
#include <fulgur/datamodules/dataset.hpp>
#include <fulgur/datamodules/encoded_image_source.hpp>

#include <cstdint>
#include <memory>

namespace fulgur {

/// The images of an EncodedImageSource (files or an HDF5 pack) through a
/// Compose pipeline, for one epoch. Unlike EncodedImageDataset, which
/// decodes whole images before its transform sees them, the pipeline tells
/// the decoder what it needs first (Compose::decode), so a JPEG is decoded
/// only inside a RandomResizedCrop window, or DCT-scaled before a big
/// Resize. Sample i of epoch e is augmented with a SampleRandom seeded by
/// sample_seed(seed, e, i): the same for any number of loader threads, any
/// batch or world size, and after a mid-epoch resume. at_epoch() gives the
/// same images with another epoch's augmentation.
class ComposedImageDataset : public Dataset {
 public:
  ComposedImageDataset(std::shared_ptr<const EncodedImageSource> source, std::shared_ptr<const Compose> pipeline,
                       uint64_t seed = 0, int64_t epoch = 0);

  int64_t size() const override { return source_->size(); }
  /// Reads, decodes and transforms image `index`; every failure is a
  /// DataError naming the image (its path, or pack:name).
  Example get(int64_t index) const override;
  std::shared_ptr<const ComposedImageDataset> at_epoch(int64_t epoch) const;

  const std::shared_ptr<const EncodedImageSource>& source() const { return source_; }
  int64_t epoch() const { return epoch_; }

 private:
  std::shared_ptr<const EncodedImageSource> source_;
  std::shared_ptr<const Compose> pipeline_;
  uint64_t seed_;
  int64_t epoch_;
};

}  // namespace fulgur
