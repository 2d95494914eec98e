#pragma once

#include <fulgur/datamodules/images/image.hpp>
#include <fulgur/datamodules/images/transforms/normalize.hpp>
#include <fulgur/datamodules/images/transforms/transform.hpp>

#include <torch/torch.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fulgur {

/// An image pipeline: uint8 transforms in order, then ToTensor and an
/// optional Normalize fused into one pass (one table lookup per value,
/// equal bit for bit to torchvision's ToTensor + Normalize). decode() also
/// lets the first transform tell the decoder what it needs (a crop window,
/// a smaller scale), so a JPEG is only partly decoded. Immutable: loader
/// threads share one Compose.
class Compose {
 public:
  explicit Compose(std::vector<std::shared_ptr<const Transform>> transforms,
                   std::optional<Normalize> normalize = std::nullopt);

  /// Runs the pipeline on a decoded image: float [3, H, W].
  torch::Tensor operator()(Image image, SampleRandom& random) const;

  /// Decodes an encoded JPEG/PNG (decode_image_rgb) and runs the pipeline;
  /// decode errors are DataError naming `source_name`.
  torch::Tensor decode(const uint8_t* data, size_t size, const std::string& source_name, SampleRandom& random) const;

  /// decode() without the conversion to float.
  Image decode_uint8(const uint8_t* data, size_t size, const std::string& source_name, SampleRandom& random) const;

  /// The uint8 part only (no conversion to float).
  Image apply_uint8(Image image, SampleRandom& random) const;

  /// ToTensor + Normalize of `image` into `out`, float [3, H, W] (a batch's
  /// slice: ImageDataset::get_batch writes each image in place).
  void write_float_chw(const Image& image, float* out) const;

 private:
  torch::Tensor to_float_chw(const Image& image) const;

  std::vector<std::shared_ptr<const Transform>> transforms_;
  std::array<std::array<float, 256>, 3> table_{};  // value of byte v in channel c
};

}  // namespace fulgur
