#pragma once

#include <torch/torch.h>

#include <filesystem>

namespace fulgur::testing {

/// How write_jpeg encodes: quality 1-100, the luma sampling factors
/// (2 x 2: 4:2:0, 4 x 1: 4:1:1, 1 x 1: 4:4:4) and progressive scans.
struct JpegEncoding {
  int quality = 90;
  int luma_h = 2;
  int luma_v = 2;
  bool progressive = false;
};

/// Writes a uint8 [height, width, 3] RGB tensor as a JPEG through libjpeg,
/// for the layouts Pillow cannot write (4:1:1). Errors throw
/// std::runtime_error starting "[write_jpeg]".
void write_jpeg(const std::filesystem::path& path, const torch::Tensor& hwc_uint8, JpegEncoding encoding = {});

}  // namespace fulgur::testing
