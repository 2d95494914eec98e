#include <fulgur/datamodules/images/transforms/to_tensor.hpp>

namespace fulgur {

torch::Tensor ToTensor::operator()(const Image& image) const {
  torch::Tensor out = torch::empty({3, image.height, image.width}, torch::kFloat32);
  float* data = out.data_ptr<float>();
  const int64_t plane = image.height * image.width;
  const uint8_t* pixels = image.pixels.get();
  for (int64_t i = 0; i < plane; ++i) {
    for (int64_t c = 0; c < 3; ++c) data[c * plane + i] = static_cast<float>(pixels[i * 3 + c]) / 255.0f;
  }
  return out;
}

}  // namespace fulgur
