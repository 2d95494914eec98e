#include <fulgur/datamodules/images/transforms/compose.hpp>

#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <stdexcept>
#include <string>

namespace fulgur {

Compose::Compose(std::vector<std::shared_ptr<const Transform>> transforms, std::optional<Normalize> normalize)
    : transforms_(std::move(transforms)) {
  for (const auto& transform : transforms_) {
    if (!transform) throw std::invalid_argument("[Compose::Compose] a transform is null");
  }
  if (normalize && normalize->channels() != 3) {
    throw std::invalid_argument("[Compose::Compose] Normalize has " + std::to_string(normalize->channels()) +
                                " channels; images here are RGB (3)");
  }
  for (size_t c = 0; c < 3; ++c) {
    for (int v = 0; v < 256; ++v) {
      const float scaled = static_cast<float>(v) / 255.0f;  // ToTensor, as torchvision computes it
      table_[c][static_cast<size_t>(v)] = normalize ? normalize->apply(c, scaled) : scaled;
    }
  }
}

torch::Tensor Compose::to_float_chw(const Image& image) const {
  torch::Tensor out = torch::empty({3, image.height, image.width}, torch::kFloat32);
  write_float_chw(image, out.data_ptr<float>());
  return out;
}

void Compose::write_float_chw(const Image& image, float* out) const {
  float* red = out;
  const int64_t plane = image.height * image.width;
  float* green = red + plane;
  float* blue = green + plane;
  const uint8_t* p = image.pixels.get();
  for (int64_t i = 0; i < plane; ++i, p += 3) {
    red[i] = table_[0][p[0]];
    green[i] = table_[1][p[1]];
    blue[i] = table_[2][p[2]];
  }
}

Image Compose::apply_uint8(Image image, SampleRandom& random) const {
  for (const auto& transform : transforms_) image = transform->apply(std::move(image), random);
  return image;
}

torch::Tensor Compose::operator()(Image image, SampleRandom& random) const {
  return to_float_chw(apply_uint8(std::move(image), random));
}

torch::Tensor Compose::decode(const uint8_t* data, size_t size, const std::string& source_name,
                              SampleRandom& random) const {
  return to_float_chw(decode_uint8(data, size, source_name, random));
}

Image Compose::decode_uint8(const uint8_t* data, size_t size, const std::string& source_name,
                            SampleRandom& random) const {
  if (transforms_.empty()) return decode_image_rgb(data, size, source_name);
  const ImageInfo info = read_image_info(data, size, source_name);
  const Transform& first = *transforms_.front();
  const DecodeRequest request = first.plan_decode(info.height, info.width, random);
  Image image = first.apply_planned(decode_image_rgb(data, size, source_name, request), request, info.height,
                                    info.width, random);
  for (size_t i = 1; i < transforms_.size(); ++i) image = transforms_[i]->apply(std::move(image), random);
  return image;
}

}  // namespace fulgur
