// The JPEG decoder behind decode_image_rgb (libjpeg-turbo's libjpeg API,
// which, unlike the TurboJPEG API, can skip rows and crop columns).
#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <fulgur/datamodules/data_error.hpp>

// jpeglib.h needs size_t and FILE declared first.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fulgur {

// libjpeg reports fatal errors through a callback that must not return; the
// way out is longjmp to a setjmp point. A longjmp must not skip destructors,
// so everything between setjmp and the last libjpeg call is plain C state in
// one struct that the caller owns and frees, as in png_decoder.cpp.
namespace {

struct ErrorManager {
  jpeg_error_mgr base;  // first member: libjpeg hands us a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

struct JpegDecoder {
  // Input.
  const uint8_t* data = nullptr;
  size_t size = 0;
  DecodeRequest request;
  bool header_only = false;
  // libjpeg state.
  jpeg_decompress_struct cinfo;
  ErrorManager error;
  bool created = false;
  // Results, malloc'd; the owner frees them.
  int64_t source_height = 0;
  int64_t source_width = 0;
  uint8_t* pixels = nullptr;
  uint8_t* scanline = nullptr;
  int64_t height = 0;
  int64_t width = 0;
  bool too_large = false;
};

void on_error(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  std::longjmp(error->jump, 1);
}

// libjpeg only warns when the data end early and fills the rest with grey;
// Pillow (and we) refuse a truncated image. Other warnings ("extraneous
// bytes before marker") are common in real photo collections and harmless.
void on_message(j_common_ptr cinfo, int level) {
  if (level == -1 && cinfo->err->msg_code == JWRN_JPEG_EOF) on_error(cinfo);
}

// Smallest DCT scale s/8 whose output still covers min_size samples of
// the region [begin, begin + length) of a side of `full` samples.
int64_t scaled_floor(int64_t value, int scale) { return value * scale / 8; }
int64_t scaled_ceil(int64_t value, int scale) { return (value * scale + 7) / 8; }

int choose_scale(const DecodeRequest& r, int64_t full_height, int64_t full_width) {
  if (r.min_height <= 0 && r.min_width <= 0) return 8;
  for (int scale = 1; scale < 8; ++scale) {
    const int64_t rows = std::min(scaled_ceil(full_height, scale), scaled_ceil(r.top + r.height, scale)) -
                         scaled_floor(r.top, scale);
    const int64_t cols = std::min(scaled_ceil(full_width, scale), scaled_ceil(r.left + r.width, scale)) -
                         scaled_floor(r.left, scale);
    if (rows >= r.min_height && cols >= r.min_width) return scale;
  }
  return 8;
}

// Pillow's CMYK -> RGB (Convert.c, cmyk2rgb) on libjpeg's samples, so that
// CMYK JPEGs decode as Pillow decodes them. Adobe files store inverted ink.
inline uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

void cmyk_to_rgb(const uint8_t* in, uint8_t* out, int64_t pixels, bool inverted) {
  for (int64_t i = 0; i < pixels; ++i, in += 4, out += 3) {
    const int k_ink = inverted ? 255 - in[3] : in[3];
    const int nk = 255 - k_ink;
    for (int c = 0; c < 3; ++c) {
      const int ink = inverted ? 255 - in[c] : in[c];
      out[c] = static_cast<uint8_t>(std::clamp(nk - muldiv255(ink, nk), 0, 255));
    }
  }
}

// Returns false with decoder->error.message set (or too_large) on failure.
bool run_decoder(JpegDecoder* d) {
  if (setjmp(d->error.jump)) return false;
  jpeg_create_decompress(&d->cinfo);
  d->created = true;
  jpeg_mem_src(&d->cinfo, d->data, static_cast<unsigned long>(d->size));
  jpeg_read_header(&d->cinfo, TRUE);
  d->source_height = d->cinfo.image_height;
  d->source_width = d->cinfo.image_width;
  if (d->source_height < 1 || d->source_width < 1 || d->source_height > kMaxImagePixels / d->source_width) {
    d->too_large = true;
    return false;
  }
  if (d->header_only) return true;

  DecodeRequest& r = d->request;
  if (r.height == 0 || r.width == 0) r = {0, 0, d->source_height, d->source_width, r.min_height, r.min_width};
  if (r.top + r.height > d->source_height || r.left + r.width > d->source_width) {
    std::snprintf(d->error.message, sizeof(d->error.message), "decode region is outside the image");
    return false;
  }
  const bool cmyk = d->cinfo.jpeg_color_space == JCS_CMYK || d->cinfo.jpeg_color_space == JCS_YCCK;
  d->cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // grey becomes RGB in libjpeg-turbo
  const int scale = choose_scale(r, d->source_height, d->source_width);
  d->cinfo.scale_num = static_cast<unsigned int>(scale);
  d->cinfo.scale_denom = 8;
  jpeg_start_decompress(&d->cinfo);

  const int64_t out_height = d->cinfo.output_height;
  const int64_t out_width = d->cinfo.output_width;
  const int64_t y0 = scaled_floor(r.top, scale);
  const int64_t y1 = std::min(out_height, scaled_ceil(r.top + r.height, scale));
  const int64_t x0 = scaled_floor(r.left, scale);
  const int64_t x1 = std::min(out_width, scaled_ceil(r.left + r.width, scale));
  d->height = y1 - y0;
  d->width = x1 - x0;

  // Columns: libjpeg decodes whole iMCU columns and moves the crop start to
  // one's boundary; `skip` is where our region starts inside that. Chroma
  // upsampling at a crop edge replicates the edge instead of reading the
  // neighbour, so keep one iMCU of margin on each side: our pixels then
  // equal those of a full decode.
#if JPEG_LIB_VERSION >= 70  // libjpeg 7+ API (e.g. libjpeg-turbo8): scaled sizes per axis
  const int64_t margin = static_cast<int64_t>(d->cinfo.max_h_samp_factor) * d->cinfo.min_DCT_h_scaled_size;
#else
  const int64_t margin = static_cast<int64_t>(d->cinfo.max_h_samp_factor) * d->cinfo.min_DCT_scaled_size;
#endif
  const int64_t crop_begin = std::max<int64_t>(0, x0 - margin);
  const int64_t crop_end = std::min(out_width, x1 + margin);
  JDIMENSION crop_x = static_cast<JDIMENSION>(crop_begin);
  JDIMENSION crop_width = static_cast<JDIMENSION>(crop_end - crop_begin);
  if (crop_end - crop_begin < out_width) jpeg_crop_scanline(&d->cinfo, &crop_x, &crop_width);
  const int64_t skip = x0 - static_cast<int64_t>(crop_x);
  const int64_t components = d->cinfo.output_components;
  const int64_t line_width = d->cinfo.output_width;

  d->pixels = static_cast<uint8_t*>(std::malloc(static_cast<size_t>(d->height * d->width * 3)));
  d->scanline = static_cast<uint8_t*>(std::malloc(static_cast<size_t>(line_width * components)));
  if (!d->pixels || !d->scanline) {
    std::snprintf(d->error.message, sizeof(d->error.message), "out of memory for the decoded image");
    return false;
  }
  if (y0 > 0) jpeg_skip_scanlines(&d->cinfo, static_cast<JDIMENSION>(y0));
  const bool direct = !cmyk && skip == 0 && line_width == d->width;
  for (int64_t y = 0; y < d->height; ++y) {
    uint8_t* out = d->pixels + y * d->width * 3;
    JSAMPROW row = direct ? out : d->scanline;
    if (jpeg_read_scanlines(&d->cinfo, &row, 1) != 1) {
      std::snprintf(d->error.message, sizeof(d->error.message), "decoder returned no row %lld",
                    static_cast<long long>(y0 + y));
      return false;
    }
    if (direct) continue;
    if (cmyk) {
      cmyk_to_rgb(d->scanline + skip * 4, out, d->width, d->cinfo.saw_Adobe_marker);
    } else {
      std::memcpy(out, d->scanline + skip * 3, static_cast<size_t>(d->width * 3));
    }
  }
  // Rows below the region are never decoded; jpeg_destroy_decompress ends it.
  return true;
}

// Runs the decoder and frees libjpeg's state; throws on failure. Returns
// the malloc'd pixels (or null for header_only).
void decode(JpegDecoder& d, const std::string& prefix) {
  std::memset(&d.cinfo, 0, sizeof(d.cinfo));
  std::memset(&d.error, 0, sizeof(d.error));
  d.cinfo.err = jpeg_std_error(&d.error.base);
  d.error.base.error_exit = on_error;
  d.error.base.emit_message = on_message;
  const bool ok = run_decoder(&d);
  if (d.created) jpeg_destroy_decompress(&d.cinfo);
  std::free(d.scanline);
  d.scanline = nullptr;
  if (ok) return;
  std::free(d.pixels);
  d.pixels = nullptr;
  if (d.too_large) check_image_size(d.source_height, d.source_width, prefix);
  throw DataError(prefix + "corrupt or truncated JPEG: " + (d.error.message[0] ? d.error.message : "unknown error"));
}

}  // namespace

ImageInfo read_jpeg_info(const uint8_t* data, size_t size, const std::string& prefix) {
  JpegDecoder d;
  d.data = data;
  d.size = size;
  d.header_only = true;
  decode(d, prefix);
  return {ImageFormat::Jpeg, d.source_height, d.source_width};
}

Image decode_jpeg_rgb(const uint8_t* data, size_t size, const std::string& prefix, const DecodeRequest& request) {
  JpegDecoder d;
  d.data = data;
  d.size = size;
  d.request = request;
  decode(d, prefix);
  Image image;
  image.height = d.height;
  image.width = d.width;
  image.pixels.reset(d.pixels);
  return image;
}

}  // namespace fulgur
