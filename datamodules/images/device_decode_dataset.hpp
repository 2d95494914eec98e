#pragma once

#include <fulgur/datamodules/images/codecs/decode_counts.hpp>
#include <fulgur/datamodules/images/codecs/nvimgcodec_decoder.hpp>
#include <fulgur/datamodules/images/decode_stats.hpp>
#include <fulgur/datamodules/images/device_image_recipe.hpp>
#include <fulgur/datamodules/images/encoded_image_source.hpp>
#include <fulgur/datamodules/loading/dataset.hpp>

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace fulgur {

/// An image dataset whose batches are decoded and transformed on the
/// training device: the loader thread reads the files and draws each
/// image's crop and flip on the host (sample_seed, as ImageDataset, so the
/// same seed gives the same crops), the whole batch is decoded in one
/// nvImageCodec call with each crop as the decode region, and resize, flip,
/// ToTensor + Normalize (and, on CUDA, the channels_last layout) run as
/// LibTorch ops on the device. On a CUDA device each loader thread works on
/// its own stream and hands the batch over finished, so decoding batch k+1
/// overlaps step k; the Strategy marks the batch as used on its stream.
///
/// An image the decoder does not take (a PNG, CMYK, a truncated or corrupt
/// file) is decoded by the CPU path (decode_image_rgb) and copied over, one
/// image at a time: a bad file throws the same DataError naming it as
/// ImageDataset, so skip_bad_samples behaves the same. ImageDataset makes
/// one for `decode: gpu | auto` (ImageDataset::for_device); the tests build
/// one on the CPU with nvImageCodec's CPU backend.
///
/// Which engine decoded each image is counted (DecodeCounts: the hardware
/// engine, nvJPEG's CUDA decoders, the CPU) per batch (decode_batch), per
/// epoch and per run (stats(), shared by the epoch views): the loader's end
/// of an epoch prints the epoch's one line, and the epoch's first batch
/// with images decoded one by one on the CPU prints a warning with the count.
class DeviceDecodeDataset : public Dataset {
 public:
  /// A batch and the engines that decoded it.
  struct DecodedBatch {
    Batch batch;
    DecodeCounts counts;
  };

  /// The decoder's backend must match the device: Gpu for CUDA, Cpu for the
  /// CPU. `stats` null: new counts (an epoch view shares its parent's).
  DeviceDecodeDataset(std::shared_ptr<const EncodedImageSource> source, DeviceImageRecipe recipe,
                      std::shared_ptr<NvImageCodecDecoder> decoder, torch::Device device, uint64_t seed = 0,
                      int64_t epoch = 0, std::shared_ptr<DecodeStats> stats = nullptr);

  int64_t size() const override { return source_->size(); }
  /// get_batch({index})'s one example.
  Example get(int64_t index) const override;
  /// Inputs float [N, 3, crop, crop] and int64 class targets, both on the device.
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  /// get_batch, with the engines that decoded its images (also recorded in
  /// stats()).
  DecodedBatch decode_batch(const std::vector<int64_t>& indices) const;
  std::shared_ptr<const Dataset> at_epoch(int64_t epoch) const override;
  /// Prints the epoch's line of engine counts (`fulgur: decode on cuda:0,
  /// epoch 3: 2560 images in 10 batches: hardware 2548, cuda 10, cpu 2 (2
  /// one by one)`).
  void finished_epoch(int64_t epoch) const override;

  const torch::Device& device() const { return device_; }
  /// The engines' counts of this dataset and its epoch views.
  const std::shared_ptr<DecodeStats>& stats() const { return stats_; }

 private:
  std::shared_ptr<const EncodedImageSource> source_;
  DeviceImageRecipe recipe_;
  std::shared_ptr<NvImageCodecDecoder> decoder_;
  torch::Device device_;
  uint64_t seed_;
  int64_t epoch_;
  std::shared_ptr<DecodeStats> stats_;
};

}  // namespace fulgur
