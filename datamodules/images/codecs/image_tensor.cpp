#include <fulgur/datamodules/images/codecs/image_tensor.hpp>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace fulgur {

torch::Tensor image_to_tensor(Image image) {
  const int64_t height = image.height;
  const int64_t width = image.width;
  uint8_t* pixels = image.pixels.release();
  return torch::from_blob(pixels, {height, width, 3}, [](void* p) { std::free(p); }, torch::kUInt8);
}

Image tensor_to_image(const torch::Tensor& image_hwc_uint8) {
  const torch::Tensor& t = image_hwc_uint8;
  if (!t.defined() || t.dim() != 3 || t.size(2) != 3 || t.scalar_type() != torch::kUInt8) {
    std::ostringstream got;
    if (t.defined()) {
      got << "dtype " << t.scalar_type() << " shape " << t.sizes();
    } else {
      got << "an undefined tensor";
    }
    throw std::invalid_argument("[tensor_to_image] expected a uint8 [height, width, 3] tensor, got " + got.str());
  }
  const torch::Tensor contiguous = t.to(torch::kCPU).contiguous();
  Image image(t.size(0), t.size(1));
  std::memcpy(image.pixels.get(), contiguous.data_ptr<uint8_t>(), image.bytes());
  return image;
}

torch::Tensor decode_image(const uint8_t* data, size_t size, const std::string& source_name) {
  return image_to_tensor(decode_image_rgb(data, size, source_name));
}

torch::Tensor read_image(const std::filesystem::path& path) {
  const std::string bytes = read_image_bytes(path);
  return decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path.string());
}

}  // namespace fulgur
