#include <fulgur/datamodules/images/transforms/random_horizontal_flip.hpp>

#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

RandomHorizontalFlip::RandomHorizontalFlip(double p) : p_(p) {
  if (!(p >= 0 && p <= 1)) {
    throw std::invalid_argument("[RandomHorizontalFlip::RandomHorizontalFlip] p must be in [0, 1], got " +
                                std::to_string(p));
  }
}

Image RandomHorizontalFlip::apply(Image image, SampleRandom& random) const {
  // Always draw, so later transforms see the same random stream either way.
  const bool flip = uniform_real(random, 0.0, 1.0) < p_;
  if (!flip) return image;
  return flip_horizontal(std::move(image));
}

}  // namespace fulgur
