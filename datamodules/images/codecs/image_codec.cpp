#include <fulgur/datamodules/images/codecs/image_codec.hpp>

#include <fulgur/datamodules/data_error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

namespace fulgur {

namespace {

const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

bool is_jpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

bool is_png(const uint8_t* data, size_t size) {
  return size >= 8 && std::memcmp(data, kPngSignature, 8) == 0;
}

std::string prefix_for(const std::string& source_name) { return "[decode_image] '" + source_name + "': "; }

// "not a JPEG or PNG image (it starts with 68 65 6c 6c)": the first bytes
// usually tell a user what the file really is (text, HTML, a GIF, ...).
[[noreturn]] void throw_unknown_format(const uint8_t* data, size_t size, const std::string& prefix) {
  if (size == 0) throw DataError(prefix + "empty (0 bytes), not an image");
  std::string start;
  char hex[4];
  for (size_t i = 0; i < std::min<size_t>(size, 8); ++i) {
    std::snprintf(hex, sizeof(hex), i ? " %02x" : "%02x", data[i]);
    start += hex;
  }
  throw DataError(prefix + "not a JPEG or PNG image (it starts with bytes " + start + ")");
}

}  // namespace

void check_image_size(int64_t height, int64_t width, const std::string& prefix) {
  if (height < 1 || width < 1) {
    throw DataError(prefix + "the header gives an empty image (" + std::to_string(width) + "x" +
                    std::to_string(height) + " pixels)");
  }
  if (height > kMaxImagePixels / width) {
    throw DataError(prefix + "the header claims " + std::to_string(width) + "x" + std::to_string(height) +
                    " pixels, more than the limit of " + std::to_string(kMaxImagePixels) +
                    " (corrupt file or decompression bomb)");
  }
}

ImageInfo read_image_info(const uint8_t* data, size_t size, const std::string& source_name) {
  const std::string prefix = prefix_for(source_name);
  if (is_jpeg(data, size)) return read_jpeg_info(data, size, prefix);
  if (is_png(data, size)) return read_png_info(data, size, prefix);
  throw_unknown_format(data, size, prefix);
}

Image decode_image_rgb(const uint8_t* data, size_t size, const std::string& source_name,
                       const DecodeRequest& request) {
  const std::string prefix = prefix_for(source_name);
  if (request.top < 0 || request.left < 0 || request.height < 0 || request.width < 0 || request.min_height < 0 ||
      request.min_width < 0) {
    throw std::invalid_argument(prefix + "negative value in the decode request");
  }
  if (is_jpeg(data, size)) return decode_jpeg_rgb(data, size, prefix, request);
  if (!is_png(data, size)) throw_unknown_format(data, size, prefix);

  Image whole = decode_png_rgb(data, size, prefix);
  if (request.height == 0 || request.width == 0) return whole;
  if (request.top + request.height > whole.height || request.left + request.width > whole.width) {
    throw std::invalid_argument(prefix + "decode region is outside the " + std::to_string(whole.width) + "x" +
                                std::to_string(whole.height) + " image");
  }
  if (request.height == whole.height && request.width == whole.width) return whole;
  Image region(request.height, request.width);
  for (int64_t y = 0; y < region.height; ++y) {
    std::memcpy(region.row(y), whole.row(request.top + y) + request.left * 3, static_cast<size_t>(region.width) * 3);
  }
  return region;
}

std::string read_image_bytes(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  const std::string prefix = "[read_image] '" + path.string() + "': ";
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int open_errno = errno;
    std::error_code ignored;
    if (open_errno == ENOENT && fs::is_symlink(fs::symlink_status(path, ignored))) {
      throw DataError(prefix + "dangling symbolic link (its target '" + fs::read_symlink(path, ignored).string() +
                      "' does not exist)");
    }
    if (open_errno == ENOENT) throw DataError(prefix + "no such file");
    throw DataError(prefix + "cannot open: " + std::strerror(open_errno));
  }
  struct stat info {};
  std::string problem;
  if (::fstat(fd, &info) != 0) {
    problem = std::string("cannot stat: ") + std::strerror(errno);
  } else if (S_ISDIR(info.st_mode)) {
    problem = "is a directory, not an image file";
  } else if (S_ISFIFO(info.st_mode)) {
    problem = "is a FIFO (named pipe), not a regular file";
  } else if (!S_ISREG(info.st_mode)) {
    problem = "is not a regular file (a socket or device)";
  } else if (info.st_size == 0) {
    problem = "empty file (0 bytes)";
  }
  std::string bytes;
  if (problem.empty()) {
    bytes.resize(static_cast<size_t>(info.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) {
        problem = std::string("read error: ") + std::strerror(errno);
        break;
      }
      if (got == 0) break;  // shrank while reading: decode what is there
      done += static_cast<size_t>(got);
    }
    bytes.resize(done);
  }
  ::close(fd);
  if (!problem.empty()) throw DataError(prefix + problem);
  return bytes;
}

bool has_image_extension(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

}  // namespace fulgur
