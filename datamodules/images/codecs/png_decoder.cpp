// The PNG decoder behind decode_image_rgb (libpng).
#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

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
  bool header_only = false;
  // libpng state and the output, freed by the owner after a longjmp.
  png_structp png = nullptr;
  png_infop info = nullptr;
  unsigned char* pixels = nullptr;  // malloc'd height * width * 3 bytes
  png_bytep* rows = nullptr;        // malloc'd row pointers into pixels
  png_uint_32 width = 0;
  png_uint_32 height = 0;
  bool too_large = false;
  char message[256] = {};
};

void record_error(png_structp png, png_const_charp message) {
  auto* decoder = static_cast<PngDecoder*>(png_get_error_ptr(png));
  std::snprintf(decoder->message, sizeof(decoder->message), "%s", message ? message : "unknown libpng error");
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

// Returns false with decoder->message (or too_large) set on any failure.
bool run_decoder(PngDecoder* decoder) {
  if (setjmp(png_jmpbuf(decoder->png))) return false;
  png_set_read_fn(decoder->png, decoder, read_from_memory);
  png_read_info(decoder->png, decoder->info);
  decoder->width = png_get_image_width(decoder->png, decoder->info);
  decoder->height = png_get_image_height(decoder->png, decoder->info);
  // Refused from the header, before any pixel buffer exists.
  if (decoder->width < 1 || decoder->height < 1 ||
      static_cast<int64_t>(decoder->height) > kMaxImagePixels / static_cast<int64_t>(decoder->width)) {
    decoder->too_large = true;
    return false;
  }
  if (decoder->header_only) return true;

  const int color_type = png_get_color_type(decoder->png, decoder->info);
  const int bit_depth = png_get_bit_depth(decoder->png, decoder->info);
  // 16-bit samples keep their high byte (value >> 8), the nearest 8-bit value.
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

void decode(PngDecoder& decoder, const std::string& prefix) {
  if (decoder.size < 8 || png_sig_cmp(decoder.data, 0, 8) != 0) {
    throw DataError(prefix + "not a PNG file (bad signature)");
  }
  decoder.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &decoder, record_error, ignore_warning);
  if (decoder.png) decoder.info = png_create_info_struct(decoder.png);
  const bool ok = decoder.png && decoder.info && run_decoder(&decoder);
  png_destroy_read_struct(decoder.png ? &decoder.png : nullptr, decoder.info ? &decoder.info : nullptr, nullptr);
  std::free(decoder.rows);
  if (ok) return;
  std::free(decoder.pixels);
  if (decoder.too_large) check_image_size(decoder.height, decoder.width, prefix);
  throw DataError(prefix + "corrupt or truncated PNG: " +
                  (decoder.message[0] ? decoder.message : "cannot create the libpng decoder"));
}

}  // namespace

ImageInfo read_png_info(const uint8_t* data, size_t size, const std::string& prefix) {
  PngDecoder decoder;
  decoder.data = data;
  decoder.size = size;
  decoder.header_only = true;
  decode(decoder, prefix);
  return {ImageFormat::Png, static_cast<int64_t>(decoder.height), static_cast<int64_t>(decoder.width)};
}

Image decode_png_rgb(const uint8_t* data, size_t size, const std::string& prefix) {
  PngDecoder decoder;
  decoder.data = data;
  decoder.size = size;
  decode(decoder, prefix);
  Image image;
  image.height = decoder.height;
  image.width = decoder.width;
  image.pixels.reset(decoder.pixels);
  return image;
}

}  // namespace fulgur
