#include "write_jpeg.hpp"

#include <cstdio>
#include <jpeglib.h>

#include <csetjmp>
#include <stdexcept>
#include <string>

namespace fulgur::testing {

namespace {

struct Error {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr info) {
  auto* error = reinterpret_cast<Error*>(info->err);
  (*info->err->format_message)(info, error->message);
  std::longjmp(error->jump, 1);
}

}  // namespace

void write_jpeg(const std::filesystem::path& path, const torch::Tensor& hwc_uint8, JpegEncoding encoding) {
  if (hwc_uint8.dim() != 3 || hwc_uint8.size(2) != 3 || hwc_uint8.scalar_type() != torch::kUInt8) {
    throw std::runtime_error("[write_jpeg] expected a uint8 [H, W, 3] tensor");
  }
  const torch::Tensor image = hwc_uint8.contiguous();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("[write_jpeg] cannot open '" + path.string() + "'");
  jpeg_compress_struct info{};
  Error error{};
  info.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = on_error;
  if (setjmp(error.jump)) {
    jpeg_destroy_compress(&info);
    std::fclose(file);
    throw std::runtime_error("[write_jpeg] '" + path.string() + "': " + error.message);
  }
  jpeg_create_compress(&info);
  jpeg_stdio_dest(&info, file);
  info.image_width = static_cast<JDIMENSION>(image.size(1));
  info.image_height = static_cast<JDIMENSION>(image.size(0));
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, encoding.quality, TRUE);
  info.comp_info[0].h_samp_factor = encoding.luma_h;
  info.comp_info[0].v_samp_factor = encoding.luma_v;
  if (encoding.progressive) jpeg_simple_progression(&info);
  jpeg_start_compress(&info, TRUE);
  const auto* pixels = image.data_ptr<uint8_t>();
  while (info.next_scanline < info.image_height) {
    auto* row = const_cast<JSAMPROW>(pixels + static_cast<size_t>(info.next_scanline) * info.image_width * 3);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  jpeg_destroy_compress(&info);
  std::fclose(file);
}

}  // namespace fulgur::testing
