#include <fulgur/engine/checkpoint/zip_checksums.hpp>

#include <fmt/format.h>
#include <zlib.h>  // crc32_z; zlib arrives with libpng

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fulgur {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64EndOfCentralDirectory = 0x06064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;

/// Bounds-checked little-endian reads over the archive bytes.
class Bytes {
 public:
  Bytes(const char* data, size_t size) : data_(reinterpret_cast<const unsigned char*>(data)), size_(size) {}

  void require(uint64_t offset, uint64_t length, const char* what) const {
    if (offset > size_ || length > size_ - offset) {
      throw std::runtime_error(fmt::format("truncated zip archive ({} at offset {} runs past the end, {} bytes)",
                                           what, offset, size_));
    }
  }
  uint64_t read(uint64_t offset, int width, const char* what) const {
    require(offset, static_cast<uint64_t>(width), what);
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i) value = (value << 8) | data_[offset + static_cast<uint64_t>(i)];
    return value;
  }
  const unsigned char* at(uint64_t offset) const { return data_ + offset; }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_;
  size_t size_;
};

struct Directory {
  uint64_t entries = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

Directory find_central_directory(const Bytes& bytes) {
  // torch.save writes no archive comment, so the end record is the last 22 bytes.
  if (bytes.size() < 22) throw std::runtime_error("not a zip archive (too short)");
  const uint64_t end = bytes.size() - 22;
  if (bytes.read(end, 4, "end record") != kEndOfCentralDirectory) {
    throw std::runtime_error("not a zip archive or truncated (no end-of-central-directory record at the end)");
  }
  Directory dir{bytes.read(end + 10, 2, "end record"), bytes.read(end + 16, 4, "end record"),
                bytes.read(end + 12, 4, "end record")};
  const bool saturated = dir.entries == 0xFFFF || dir.offset == 0xFFFFFFFF || dir.size == 0xFFFFFFFF;
  const bool has_locator = end >= 20 && bytes.read(end - 20, 4, "zip64 locator") == kZip64Locator;
  if (saturated && !has_locator) throw std::runtime_error("corrupt zip archive (zip64 locator missing)");
  // LibTorch's reader (miniz) takes the zip64 record whenever its locator is
  // there, and reads it unchecked: its values must be checked too, and agree
  // with the classic record where that one is not saturated.
  if (has_locator) {
    const uint64_t record = bytes.read(end - 20 + 8, 8, "zip64 locator");
    if (bytes.read(record, 4, "zip64 end record") != kZip64EndOfCentralDirectory) {
      throw std::runtime_error("corrupt zip archive (zip64 end record missing)");
    }
    const Directory dir64{bytes.read(record + 32, 8, "zip64 end record"),
                          bytes.read(record + 48, 8, "zip64 end record"),
                          bytes.read(record + 40, 8, "zip64 end record")};
    if ((dir.entries != 0xFFFF && dir.entries != dir64.entries) ||
        (dir.offset != 0xFFFFFFFF && dir.offset != dir64.offset) ||
        (dir.size != 0xFFFFFFFF && dir.size != dir64.size)) {
      throw std::runtime_error("corrupt zip archive (the zip64 end record disagrees with the end record)");
    }
    dir = dir64;
  }
  bytes.require(dir.offset, dir.size, "central directory");
  if (dir.entries == 0) throw std::runtime_error("empty zip archive");
  return dir;
}

}  // namespace

void verify_zip_checksums(const char* data, size_t size) {
  const Bytes bytes(data, size);
  const Directory dir = find_central_directory(bytes);
  uint64_t entry = dir.offset;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (bytes.read(entry, 4, "central directory entry") != kCentralHeader) {
      throw std::runtime_error(fmt::format("corrupt zip archive (central directory entry {} is damaged)", i));
    }
    const uint64_t method = bytes.read(entry + 10, 2, "central directory entry");
    const uint32_t crc = static_cast<uint32_t>(bytes.read(entry + 16, 4, "central directory entry"));
    uint64_t compressed = bytes.read(entry + 20, 4, "central directory entry");
    uint64_t uncompressed = bytes.read(entry + 24, 4, "central directory entry");
    const uint64_t name_length = bytes.read(entry + 28, 2, "central directory entry");
    const uint64_t extra_length = bytes.read(entry + 30, 2, "central directory entry");
    const uint64_t comment_length = bytes.read(entry + 32, 2, "central directory entry");
    uint64_t local = bytes.read(entry + 42, 4, "central directory entry");
    bytes.require(entry + 46, name_length + extra_length, "central directory entry");
    const std::string name(reinterpret_cast<const char*>(bytes.at(entry + 46)), name_length);

    // Zip64: fields saturated at 0xFFFFFFFF follow in the 0x0001 extra field, in this order.
    uint64_t extra = entry + 46 + name_length;
    const uint64_t extra_end = extra + extra_length;
    while (extra + 4 <= extra_end) {
      const uint64_t id = bytes.read(extra, 2, "extra field");
      const uint64_t length = bytes.read(extra + 2, 2, "extra field");
      if (extra + 4 + length > extra_end) throw std::runtime_error(fmt::format("corrupt zip entry '{}'", name));
      if (id == kZip64ExtraId) {
        uint64_t field = extra + 4;
        for (uint64_t* value : {&uncompressed, &compressed, &local}) {
          if (*value != 0xFFFFFFFF) continue;
          if (field + 8 > extra + 4 + length) throw std::runtime_error(fmt::format("corrupt zip entry '{}'", name));
          *value = bytes.read(field, 8, "zip64 field");
          field += 8;
        }
      }
      extra += 4 + length;
    }
    if (method != 0 || compressed != uncompressed) {
      throw std::runtime_error(fmt::format("zip entry '{}' is compressed; checkpoints store records uncompressed", name));
    }
    if (bytes.read(local, 4, "local header") != kLocalHeader) {
      throw std::runtime_error(fmt::format("corrupt zip archive (local header of '{}' is damaged)", name));
    }
    const uint64_t start =
        local + 30 + bytes.read(local + 26, 2, "local header") + bytes.read(local + 28, 2, "local header");
    bytes.require(start, compressed, "record data");
    if (crc32_z(0L, bytes.at(start), compressed) != crc) {
      throw std::runtime_error(fmt::format("record '{}' fails its CRC-32 check (the file is corrupt)", name));
    }
    entry += 46 + name_length + extra_length + comment_length;
  }
}

}  // namespace fulgur
