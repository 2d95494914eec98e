#include <fulgur/datamodules/png_image.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <png.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace fulgur {

// libpng reports errors by calling an error callback that must not return.
// The documented, portable way out is longjmp back to a setjmp point. A
// longjmp must not cross a frame that owns C++ objects with destructors, so
// everything the decoder touches between setjmp and the last libpng call is
// plain C state in a context struct, owned by the caller (which frees it),
// and the setjmp frame holds no C++ objects at all.
namespace {

struct PngDecoder {
  // Input, read by the libpng read callback.
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t offset = 0;
  // libpng state and the output, freed by the owner after a longjmp.
  png_structp png = nullptr;
  png_infop info = nullptr;
  unsigned char* pixels = nullptr;  // malloc'd height * width * 3 bytes
  png_bytep* rows = nullptr;        // malloc'd row pointers into pixels
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  char message[256] = {};
};

// libpng error callback: keeps the message in the decoder or encoder state
// (`State::message`) and jumps back to the setjmp point.
template <class State>
void record_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<State*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message ? message : "unknown libpng error");
  png_longjmp(png, 1);
}

// Warnings (an sRGB profile libpng dislikes, say) do not make the image unusable.
void ignore_warning(png_structp, png_const_charp) {}

void read_from_memory(png_structp png, png_bytep out, size_t length) {
  auto* decoder = static_cast<PngDecoder*>(png_get_io_ptr(png));
  if (length > decoder->size - decoder->offset) png_error(png, "file is truncated (unexpected end of data)");
  std::memcpy(out, decoder->data + decoder->offset, length);
  decoder->offset += length;
}

// Returns false with decoder->message set on any libpng error.
bool run_decoder(PngDecoder* decoder) {
  if (setjmp(png_jmpbuf(decoder->png))) return false;
  png_set_read_fn(decoder->png, decoder, read_from_memory);
  png_read_info(decoder->png, decoder->info);

  const int color_type = png_get_color_type(decoder->png, decoder->info);
  const int bit_depth = png_get_bit_depth(decoder->png, decoder->info);
  if (bit_depth == 16) png_set_strip_16(decoder->png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(decoder->png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(decoder->png);
  if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(decoder->png);
  // Alpha is dropped, whether a channel or a tRNS chunk (which
  // png_set_palette_to_rgb would otherwise expand into a fourth channel).
  if ((color_type & PNG_COLOR_MASK_ALPHA) || png_get_valid(decoder->png, decoder->info, PNG_INFO_tRNS)) {
    png_set_strip_alpha(decoder->png);
  }
  png_set_interlace_handling(decoder->png);
  png_read_update_info(decoder->png, decoder->info);

  decoder->width = png_get_image_width(decoder->png, decoder->info);
  decoder->height = png_get_image_height(decoder->png, decoder->info);
  const size_t row_bytes = png_get_rowbytes(decoder->png, decoder->info);
  if (png_get_channels(decoder->png, decoder->info) != 3 || png_get_bit_depth(decoder->png, decoder->info) != 8 ||
      row_bytes != static_cast<size_t>(decoder->width) * 3) {
    png_error(decoder->png, "unsupported pixel layout after conversion to 8-bit RGB");
  }
  decoder->pixels = static_cast<unsigned char*>(std::malloc(row_bytes * decoder->height));
  decoder->rows = static_cast<png_bytep*>(std::malloc(sizeof(png_bytep) * decoder->height));
  if (!decoder->pixels || !decoder->rows) png_error(decoder->png, "out of memory for the decoded image");
  for (png_uint_32 y = 0; y < decoder->height; ++y) decoder->rows[y] = decoder->pixels + y * row_bytes;
  png_read_image(decoder->png, decoder->rows);
  // Reads up to IEND so damage after the pixel data is reported too.
  png_read_end(decoder->png, nullptr);
  return true;
}

torch::Tensor decode(const uint8_t* data, size_t size, const std::string& prefix) {
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) throw DataError(prefix + "not a PNG file (bad signature)");
  PngDecoder decoder;
  decoder.data = data;
  decoder.size = size;
  decoder.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &decoder, record_error<PngDecoder>, ignore_warning);
  if (decoder.png) decoder.info = png_create_info_struct(decoder.png);
  const bool ok = decoder.png && decoder.info && run_decoder(&decoder);
  png_destroy_read_struct(decoder.png ? &decoder.png : nullptr, decoder.info ? &decoder.info : nullptr, nullptr);
  std::free(decoder.rows);
  if (!ok) {
    std::free(decoder.pixels);
    throw DataError(prefix + "corrupt or truncated PNG: " +
                             (decoder.message[0] ? decoder.message : "cannot create the libpng decoder"));
  }
  const auto height = static_cast<int64_t>(decoder.height);
  const auto width = static_cast<int64_t>(decoder.width);
  return torch::from_blob(decoder.pixels, {height, width, 3}, [](void* pixels) { std::free(pixels); }, torch::kUInt8);
}

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

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

}  // namespace

torch::Tensor decode_png(const uint8_t* data, size_t size, const std::string& name) {
  return decode(data, size, "[decode_png] " + name + ": ");
}

torch::Tensor read_png(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const std::string reason = std::filesystem::exists(path) ? "cannot open (permission denied or not a file)"
                                                              : "no such file";
    throw DataError("[read_png] " + quoted(path) + ": " + reason);
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("[read_png] " + quoted(path) + ": read error");
  return decode(bytes.data(), bytes.size(), "[read_png] " + quoted(path) + ": ");
}

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

}  // namespace fulgur
