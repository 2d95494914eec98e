#include <fulgur/datamodules/encoded_image_decoder.hpp>

#include <fulgur/datamodules/png_image.hpp>

namespace fulgur {

torch::Tensor decode_encoded_image(const uint8_t* data, size_t size, const std::string& source) {
  return decode_png(data, size, source);
}

}  // namespace fulgur
