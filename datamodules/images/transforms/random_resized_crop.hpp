#pragma once

#include <fulgur/datamodules/images/transforms/transform.hpp>

#include <array>
#include <cstdint>

namespace fulgur {

/// torchvision's RandomResizedCrop: a window covering a random fraction of
/// the area (`scale`) with a random aspect ratio (`ratio`, sampled
/// log-uniformly), up to 10 attempts to fit it in the image and then the
/// central crop of the nearest allowed ratio; resized to height x width with
/// resize_bilinear. Before decoding it asks for the window only, so a JPEG
/// decoder skips the rows and columns outside it, and allows DCT scaling
/// while the window keeps at least twice the output size per side.
class RandomResizedCrop : public Transform {
 public:
  explicit RandomResizedCrop(int64_t size, std::array<double, 2> scale = {0.08, 1.0},
                             std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0});
  RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale, std::array<double, 2> ratio);

  /// torchvision's RandomResizedCrop.get_params with our random source.
  CropBox sample_box(int64_t image_height, int64_t image_width, SampleRandom& random) const;
  /// Crops `box` and resizes it to the output size (no randomness).
  Image crop_and_resize(const Image& image, const CropBox& box) const;

  Image apply(Image image, SampleRandom& random) const override;
  DecodeRequest plan_decode(int64_t source_height, int64_t source_width, SampleRandom& random) const override;
  Image apply_planned(Image decoded, const DecodeRequest& request, int64_t source_height, int64_t source_width,
                      SampleRandom& random) const override;

 private:
  int64_t height_;
  int64_t width_;
  std::array<double, 2> scale_;
  std::array<double, 2> ratio_;
};

}  // namespace fulgur
