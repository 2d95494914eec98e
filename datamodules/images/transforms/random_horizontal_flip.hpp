#pragma once

#include <fulgur/datamodules/images/transforms/transform.hpp>

namespace fulgur {

/// torchvision's RandomHorizontalFlip: mirrors the image with probability p.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(double p = 0.5);

  Image apply(Image image, SampleRandom& random) const override;

 private:
  double p_;
};

}  // namespace fulgur
