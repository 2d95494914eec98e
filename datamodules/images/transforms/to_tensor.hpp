#pragma once

#include <fulgur/datamodules/images/image.hpp>

#include <torch/torch.h>

namespace fulgur {

/// torchvision's ToTensor: an 8-bit RGB image (HWC) becomes float [3, H, W]
/// with values v / 255 (the same float32 division, so equal bit for bit).
class ToTensor {
 public:
  torch::Tensor operator()(const Image& image) const;
};

}  // namespace fulgur
