#include "write_png.hpp"

#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace fulgur::testing {

namespace {

// libpng error callback: keeps the message in the encoder state and jumps
// back to the setjmp point. No C++ object with a destructor lives between
// setjmp and the libpng calls, so the longjmp skips none.
template <class State>
void record_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<State*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

void ignore_warning(png_structp, png_const_charp) {}

struct PngEncoder {
  std::FILE* file = nullptr;
  png_structp png = nullptr;
  png_infop info = nullptr;
  const unsigned char* pixels = nullptr;
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  int channels = 0;
  char message[256] = {};
};

bool run_encoder(PngEncoder* encoder) {
  if (setjmp(png_jmpbuf(encoder->png))) return false;
  png_init_io(encoder->png, encoder->file);
  png_set_IHDR(encoder->png, encoder->info, encoder->width, encoder->height, 8,
               encoder->channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(encoder->png, encoder->info);
  const size_t row_bytes = static_cast<size_t>(encoder->width) * static_cast<size_t>(encoder->channels);
  for (png_uint_32 y = 0; y < encoder->height; ++y) {
    png_write_row(encoder->png, encoder->pixels + y * row_bytes);
  }
  png_write_end(encoder->png, nullptr);
  return true;
}

// Appended, not "'" + string: GCC 12 warns on that (a -Wstringop-overflow false positive).
std::string quoted(const std::filesystem::path& path) {
  std::string out = "'";
  out += path.string();
  out += "'";
  return out;
}

}  // namespace

void write_png(const std::filesystem::path& path, const torch::Tensor& hwc_uint8) {
  const std::string prefix = "[write_png] " + quoted(path) + ": ";
  if (!hwc_uint8.defined() || hwc_uint8.dim() != 3 || hwc_uint8.scalar_type() != torch::kUInt8 ||
      (hwc_uint8.size(2) != 1 && hwc_uint8.size(2) != 3) || hwc_uint8.size(0) < 1 || hwc_uint8.size(1) < 1) {
    std::ostringstream got;
    if (hwc_uint8.defined()) {
      got << "dtype " << hwc_uint8.scalar_type() << " shape " << hwc_uint8.sizes();
    } else {
      got << "an undefined tensor";
    }
    throw std::invalid_argument(prefix + "expected a uint8 [height, width, 1 or 3] tensor, got " + got.str());
  }
  const torch::Tensor image = hwc_uint8.to(torch::kCPU).contiguous();
  PngEncoder encoder;
  encoder.pixels = image.data_ptr<uint8_t>();
  encoder.height = static_cast<png_uint_32>(image.size(0));
  encoder.width = static_cast<png_uint_32>(image.size(1));
  encoder.channels = static_cast<int>(image.size(2));
  encoder.file = std::fopen(path.c_str(), "wb");
  if (!encoder.file) {
    throw std::runtime_error(prefix + "cannot open for writing: " + std::generic_category().message(errno));
  }
  encoder.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &encoder, record_error<PngEncoder>, ignore_warning);
  if (encoder.png) encoder.info = png_create_info_struct(encoder.png);
  bool ok = encoder.png && encoder.info && run_encoder(&encoder);
  png_destroy_write_struct(encoder.png ? &encoder.png : nullptr, encoder.info ? &encoder.info : nullptr);
  if (std::fclose(encoder.file) != 0 && ok) {
    ok = false;
    std::snprintf(encoder.message, sizeof(encoder.message), "close failed: %s", std::strerror(errno));
  }
  if (!ok) {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    throw std::runtime_error(prefix + (encoder.message[0] ? encoder.message : "cannot create the libpng encoder"));
  }
}

}  // namespace fulgur::testing
