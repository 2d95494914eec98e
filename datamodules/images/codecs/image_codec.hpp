#pragma once

#include <fulgur/datamodules/images/image.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

// Decoding of encoded images (JPEG, PNG) into 8-bit RGB, without LibTorch
// (jpeg_decoder.cpp on libjpeg-turbo, png_decoder.cpp on libpng;
// image_tensor.hpp wraps the result in a tensor).
// Every failure throws DataError (data_error.hpp) whose message starts with
// "[decode_image] '<source>': " and says why; nothing here crashes or hangs
// on bad bytes (a libFuzzer target holds that, see fuzz/).
namespace fulgur {

enum class ImageFormat { Jpeg, Png };

/// What the header says, read without decoding pixels.
struct ImageInfo {
  ImageFormat format = ImageFormat::Jpeg;
  int64_t height = 0;
  int64_t width = 0;
};

/// Images with more pixels than this are refused from their header, before
/// any pixel buffer is allocated (Pillow's decompression-bomb limit: 2 x
/// 89,478,485). A corrupt or hostile header cannot make us allocate 10 GB.
inline constexpr int64_t kMaxImagePixels = 178956970;

/// Which part of the source a consumer needs, so the decoder can skip the
/// rest. The region is in source pixels; an empty region (height or width
/// 0) means the whole image. min_height/min_width > 0 allow the JPEG decoder
/// to scale the region down in the DCT domain (by 1/8 .. 7/8) as long as the
/// result keeps at least that many rows/columns; 0 means full resolution.
struct DecodeRequest {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t min_height = 0;
  int64_t min_width = 0;
};

/// Format by magic bytes (JPEG: FF D8 FF; PNG: the 8-byte signature) and
/// size from the header. Throws DataError for anything else, for a header
/// that cannot be parsed, and for more than kMaxImagePixels pixels.
ImageInfo read_image_info(const uint8_t* data, size_t size, const std::string& source_name);

/// Decodes the requested region of a JPEG or PNG (sniffed by magic bytes,
/// not by the file name) into 8-bit RGB. Grey, grey+alpha, palette, 16-bit
/// and RGBA PNGs and grey, CMYK and YCCK JPEGs all become RGB (see docs/data.md,
/// "Images: decoding and transforms"). The result has the region's size, or
/// less when DCT scaling was allowed and used. A PNG is always decoded
/// whole and then cropped (PNG rows cannot be skipped).
Image decode_image_rgb(const uint8_t* data, size_t size, const std::string& source_name,
                       const DecodeRequest& request = {});

/// The bytes of an image file. Refuses, with DataError naming the path and
/// the reason, a missing file, a dangling symbolic link, a directory, a
/// FIFO/socket/device (checked before reading, so a FIFO cannot block a
/// loader thread), a file that cannot be opened (permission denied), an
/// empty file and a read error.
std::string read_image_bytes(const std::filesystem::path& path);

/// True for the file names image folders read: .jpg, .jpeg, .png in any case.
bool has_image_extension(const std::filesystem::path& path);

// The two decoders behind decode_image_rgb; `prefix` starts every message.
ImageInfo read_jpeg_info(const uint8_t* data, size_t size, const std::string& prefix);
Image decode_jpeg_rgb(const uint8_t* data, size_t size, const std::string& prefix, const DecodeRequest& request);
ImageInfo read_png_info(const uint8_t* data, size_t size, const std::string& prefix);
Image decode_png_rgb(const uint8_t* data, size_t size, const std::string& prefix);

/// Throws DataError(prefix + ...) when height x width exceeds kMaxImagePixels or is empty.
void check_image_size(int64_t height, int64_t width, const std::string& prefix);

}  // namespace fulgur
