#pragma once

#include <fulgur/datamodules/images/codecs/image_codec.hpp>
#include <fulgur/datamodules/images/image.hpp>

#include <cstdint>
#include <random>

namespace fulgur {

/// The random source of one sample's augmentation, seeded with
/// sample_seed(seed, epoch, index) so a sample is augmented the same way
/// whichever loader thread (or rank) handles it.
using SampleRandom = std::mt19937_64;

/// A seed for one sample's augmentation that depends only on the dataset
/// seed, the epoch and the sample index: the same for any number of loader
/// threads, batch or world size, and different between epochs. Nested
/// SplitMix64 finalisers (bijective mixers), so nearby (epoch, index) pairs
/// give unrelated generator seeds.
inline uint64_t sample_seed(uint64_t seed, int64_t epoch, int64_t index) {
  const auto mix = [](uint64_t value) {
    value += 0x9e3779b97f4a7c15ULL;
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
    value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
    return value ^ (value >> 31);
  };
  return mix(mix(mix(seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(index));
}

/// Uniform in [low, high) with 53 random bits.
inline double uniform_real(SampleRandom& random, double low, double high) {
  return low + (high - low) * static_cast<double>(random() >> 11) * 0x1.0p-53;
}

/// Uniform integer in [low, high_exclusive); high_exclusive > low.
inline int64_t uniform_int(SampleRandom& random, int64_t low, int64_t high_exclusive) {
  return low + static_cast<int64_t>(random() % static_cast<uint64_t>(high_exclusive - low));
}

/// A crop window in source pixels.
struct CropBox {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

/// One step of an image pipeline on 8-bit RGB (uint8 HWC) images, before
/// the single conversion to float CHW (Compose). Implementations are
/// immutable after construction, so loader threads share one instance.
///
/// A transform that needs only part of the source (a crop) or a smaller
/// version of it (a big shrink) can say so before decoding: plan_decode()
/// draws its random numbers and returns the region it needs, the decoder
/// decodes only that (and may scale it down in the DCT domain), and
/// apply_planned() finishes the job on what the decoder returned.
class Transform {
 public:
  virtual ~Transform() = default;

  virtual Image apply(Image image, SampleRandom& random) const = 0;

  /// The part of a source_height x source_width image this transform needs.
  /// Default: all of it, at full resolution (no random numbers drawn).
  virtual DecodeRequest plan_decode(int64_t /*source_height*/, int64_t /*source_width*/,
                                    SampleRandom& /*random*/) const {
    return {};
  }

  /// Finishes on `decoded`, the decoder's answer to plan_decode()'s
  /// `request` for a source of the given size. Default: apply().
  virtual Image apply_planned(Image decoded, const DecodeRequest& /*request*/, int64_t /*source_height*/,
                              int64_t /*source_width*/, SampleRandom& random) const {
    return apply(std::move(decoded), random);
  }
};

}  // namespace fulgur
