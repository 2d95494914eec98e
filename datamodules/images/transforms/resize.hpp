#pragma once

#include <fulgur/datamodules/images/transforms/transform.hpp>

#include <cstdint>
#include <utility>

namespace fulgur {

/// torchvision's Resize: with one size, the shorter side becomes `size` and
/// the longer one keeps the aspect ratio (truncated, as torchvision does);
/// with two, the image becomes exactly height x width. Bilinear with
/// antialiasing (resize_bilinear). Before decoding it allows DCT scaling
/// while the image keeps at least twice the output size per side.
class Resize : public Transform {
 public:
  explicit Resize(int64_t shorter_side);
  Resize(int64_t height, int64_t width);

  /// (height, width) of the output for an input of the given size.
  std::pair<int64_t, int64_t> output_size(int64_t height, int64_t width) const;

  Image apply(Image image, SampleRandom& random) const override;
  DecodeRequest plan_decode(int64_t source_height, int64_t source_width, SampleRandom& random) const override;
  Image apply_planned(Image decoded, const DecodeRequest& request, int64_t source_height, int64_t source_width,
                      SampleRandom& random) const override;

 private:
  int64_t shorter_side_ = 0;  // 0: fixed height_ x width_
  int64_t height_ = 0;
  int64_t width_ = 0;
};

}  // namespace fulgur
