#pragma once

#include <fulgur/datamodules/images/decode_mode.hpp>
#include <fulgur/datamodules/images/device_image_recipe.hpp>
#include <fulgur/datamodules/images/encoded_image_source.hpp>
#include <fulgur/datamodules/images/transforms/compose.hpp>
#include <fulgur/datamodules/loading/dataset.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace fulgur {

/// The one image dataset: a source (class folders, an index file, an HDF5
/// pack, CIFAR-10 batches) + a recipe (a Compose of uint8 transforms, then
/// ToTensor and Normalize in one pass) + the epoch, which the loader
/// supplies (DatasetLoader::set_epoch reads at_epoch(epoch) for each pass).
///
/// Sample i of epoch e is augmented with a SampleRandom seeded by
/// sample_seed(seed, e, i): a function of the sample, not of the worker
/// thread or rank that reads it, so the augmentation is the same for any
/// num_workers, batch or world size, and after a mid-epoch resume. The
/// recipe tells the decoder what it needs first (Compose::decode), so a JPEG
/// is decoded only inside a RandomResizedCrop window, or DCT-scaled before
/// a big Resize.
/// Decoding on the training device: `decode: gpu | auto` and the recipe
/// that does there what the Compose recipe does on the CPU.
struct DeviceDecode {
  DecodeMode mode = DecodeMode::Cpu;
  std::optional<DeviceImageRecipe> recipe;
  /// Images per loader batch, to size the GPU decoder's buffers for (0: unknown).
  int64_t batch_size = 0;
  /// `auto` without a recipe: why the images stay on the CPU (a pipeline
  /// set from C++), said in auto's one line like every other reason.
  std::string cpu_reason;
};

class ImageDataset : public Dataset {
 public:
  /// `recipe` null: ToTensor only (float [3, H, W] in [0, 1]).
  explicit ImageDataset(std::shared_ptr<const EncodedImageSource> source,
                        std::shared_ptr<const Compose> recipe = nullptr, uint64_t seed = 0, int64_t epoch = 0,
                        DeviceDecode device_decode = {});

  int64_t size() const override { return source_->size(); }
  /// Reads, decodes and transforms image `index`; every failure is a
  /// DataError naming the image (its path, or pack:name).
  Example get(int64_t index) const override;
  /// get() of each index, each image converted straight into its slice of
  /// the batch tensor (no per-sample float tensor, no copy to collate).
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// The same images with epoch `epoch`'s augmentation (sharing source and recipe).
  std::shared_ptr<const Dataset> at_epoch(int64_t epoch) const override;
  /// With `decode: gpu | auto` and a CUDA `device` where nvImageCodec
  /// loads: a DeviceDecodeDataset of the same images, seed and epoch.
  /// `auto` otherwise stays on the CPU (null) and says why in one line;
  /// `gpu` otherwise throws std::invalid_argument saying why (the command
  /// line's bad-input exit code, 2).
  std::shared_ptr<const Dataset> for_device(const torch::Device& device) const override;

  const std::shared_ptr<const EncodedImageSource>& source() const { return source_; }
  const std::shared_ptr<const Compose>& recipe() const { return recipe_; }
  uint64_t seed() const { return seed_; }
  int64_t epoch() const { return epoch_; }

  /// A data module's seed option, else one drawn from torch's default CPU
  /// generator, so torch::manual_seed (seed_everything) decides both the
  /// order and the augmentation.
  static uint64_t seed_or_draw(const std::optional<int64_t>& seed);

 private:
  /// Image `index` through the uint8 part of the recipe.
  Image transformed(int64_t index) const;

  std::shared_ptr<const EncodedImageSource> source_;
  std::shared_ptr<const Compose> recipe_;
  uint64_t seed_;
  int64_t epoch_;
  DeviceDecode device_decode_;
};

}  // namespace fulgur
