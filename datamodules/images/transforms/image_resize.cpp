#include <fulgur/datamodules/images/transforms/image_resize.hpp>

#include <fulgur/datamodules/images/transforms/image_ops.hpp>

#include <ATen/ops/_upsample_bilinear2d_aa.h>
#include <torch/torch.h>

#include <stdexcept>
#include <string>

namespace fulgur {

namespace {

// An HWC uint8 buffer seen as a channels_last [1, 3, H, W] tensor (no copy):
// the layout LibTorch's vectorised uint8 path takes.
at::Tensor nchw_view(const uint8_t* pixels, int64_t height, int64_t width) {
  return torch::from_blob(const_cast<uint8_t*>(pixels), {1, 3, height, width}, {height * width * 3, 1, width * 3, 3},
                          torch::kUInt8);
}

}  // namespace

Image resize_bilinear(const Image& image, int64_t height, int64_t width) {
  if (height < 1 || width < 1 || image.height < 1 || image.width < 1) {
    throw std::invalid_argument("[resize_bilinear] cannot resize " + std::to_string(image.height) + "x" +
                                std::to_string(image.width) + " to " + std::to_string(height) + "x" +
                                std::to_string(width));
  }
  if (height == image.height && width == image.width) return crop_image(image, 0, 0, height, width);
  Image out(height, width);
  at::Tensor result = nchw_view(out.pixels.get(), height, width);
  at::_upsample_bilinear2d_aa_out(result, nchw_view(image.pixels.get(), image.height, image.width), {height, width},
                                  /*align_corners=*/false);
  if (result.data_ptr() != out.pixels.get()) {
    throw std::logic_error("[resize_bilinear] LibTorch wrote elsewhere than the output buffer");
  }
  return out;
}

}  // namespace fulgur
