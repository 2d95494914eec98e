#include <fulgur/ensemble/wire_header.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace fulgur {

namespace {

// Every number little-endian, byte by byte, whatever the host's order (on a little-endian host the compiler
// makes each a plain load or store).
template <class T>
void put(std::string& out, size_t at, T value) {
  std::make_unsigned_t<T> bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i) out[at + i] = static_cast<char>((bits >> (8 * i)) & 0xff);
}

template <class T>
T get(const unsigned char* in, size_t at) {
  std::make_unsigned_t<T> bits = 0;
  for (size_t i = 0; i < sizeof(T); ++i) bits |= static_cast<std::make_unsigned_t<T>>(in[at + i]) << (8 * i);
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

// Elements of a sample times `count` times `element`, refusing overflow and anything over `limit` bytes.
size_t frame_bytes(const std::vector<int64_t>& shape, uint64_t count, size_t element, size_t limit,
                   const char* what) {
  unsigned __int128 bytes = static_cast<unsigned __int128>(count) * element;
  for (const int64_t extent : shape) {
    bytes *= static_cast<uint64_t>(extent);
    if (bytes > limit) break;
  }
  if (bytes > limit) {
    throw std::invalid_argument(std::string(what) + " would exceed the largest message the server takes (" +
                                std::to_string(limit) + " bytes)");
  }
  return static_cast<size_t>(bytes);
}

}  // namespace

// Layout: 0 magic u32 | 4 version u16 | 6 kind u16 | 8 key[16] | 24 client u64 | 32 sequence u64 |
// 40 dtype u8 | 41 input dims u8 | 42 target dims u8 | 43 flags u8 | 44 count u32 | 48 message u64 | 56 extents i64...
std::string WireHeader::encode() const {
  std::string out(kFixedBytes + 8 * (input_shape.size() + target_shape.size()), '\0');
  put(out, 0, kMagic);
  put(out, 4, kVersion);
  put(out, 6, static_cast<uint16_t>(kind));
  std::memcpy(out.data() + 8, key.data(), kKeyBytes);
  put(out, 24, client_id);
  put(out, 32, sequence);
  put(out, 40, static_cast<uint8_t>(dtype));
  put(out, 41, static_cast<uint8_t>(input_shape.size()));
  put(out, 42, static_cast<uint8_t>(target_shape.size()));
  put(out, 43, flags);
  put(out, 44, count);
  put(out, 48, message);
  size_t at = kFixedBytes;
  for (const auto* shape : {&input_shape, &target_shape}) {
    for (const int64_t extent : *shape) {
      put(out, at, extent);
      at += 8;
    }
  }
  return out;
}

uint16_t WireHeader::foreign_version(const void* data, size_t size) {
  const auto* in = static_cast<const unsigned char*>(data);
  if (size < 6 || get<uint32_t>(in, 0) != kMagic) return 0;
  const auto version = get<uint16_t>(in, 4);
  return version == kVersion ? 0 : version;
}

void WireHeader::little_endian(void* data, size_t bytes, size_t element) {
  if constexpr (std::endian::native != std::endian::little) {
    auto* at = static_cast<unsigned char*>(data);
    for (size_t i = 0; i + element <= bytes; i += element) std::reverse(at + i, at + i + element);
  } else {
    (void)data, (void)bytes, (void)element;
  }
}

WireHeader WireHeader::decode(const void* data, size_t size) {
  const auto* in = static_cast<const unsigned char*>(data);
  if (size < kFixedBytes) {
    throw std::invalid_argument("a header of " + std::to_string(size) + " bytes (at least " +
                                std::to_string(kFixedBytes) + ")");
  }
  if (get<uint32_t>(in, 0) != kMagic) throw std::invalid_argument("not a fulgur ensemble message (magic)");
  if (get<uint16_t>(in, 4) != kVersion) {
    throw std::invalid_argument("protocol version " + std::to_string(get<uint16_t>(in, 4)) + " (this server: " +
                                std::to_string(kVersion) + ")");
  }
  WireHeader h;
  const auto kind = get<uint16_t>(in, 6);
  if (kind < static_cast<uint16_t>(Kind::Samples) || kind > static_cast<uint16_t>(Kind::Ack)) {
    throw std::invalid_argument("message kind " + std::to_string(kind));
  }
  h.kind = static_cast<Kind>(kind);
  std::memcpy(h.key.data(), in + 8, kKeyBytes);
  h.client_id = get<uint64_t>(in, 24);
  h.sequence = get<uint64_t>(in, 32);
  const auto dtype = get<uint8_t>(in, 40);
  if (dtype != static_cast<uint8_t>(DType::Float32) && dtype != static_cast<uint8_t>(DType::Float64)) {
    throw std::invalid_argument("dtype code " + std::to_string(dtype) + " (1: float32, 2: float64)");
  }
  h.dtype = static_cast<DType>(dtype);
  const int input_dims = get<uint8_t>(in, 41);
  const int target_dims = get<uint8_t>(in, 42);
  if (input_dims > kMaxDims || target_dims > kMaxDims) {
    throw std::invalid_argument("more than " + std::to_string(kMaxDims) + " dimensions per sample");
  }
  if (size != kFixedBytes + 8 * static_cast<size_t>(input_dims + target_dims)) {
    throw std::invalid_argument("a header of " + std::to_string(size) + " bytes for " +
                                std::to_string(input_dims + target_dims) + " extents");
  }
  h.flags = get<uint8_t>(in, 43);
  h.count = get<uint32_t>(in, 44);
  h.message = get<uint64_t>(in, 48);
  size_t at = kFixedBytes;
  for (auto [shape, dims] : {std::pair{&h.input_shape, input_dims}, std::pair{&h.target_shape, target_dims}}) {
    for (int d = 0; d < dims; ++d, at += 8) {
      const auto extent = get<int64_t>(in, at);
      if (extent < 1) throw std::invalid_argument("an extent of " + std::to_string(extent));
      shape->push_back(extent);
    }
  }
  if (h.kind == Kind::Samples && h.count == 0) throw std::invalid_argument("a message of 0 samples");
  return h;
}

size_t WireHeader::input_bytes(size_t limit) const {
  return frame_bytes(input_shape, count, element_size(), limit, "the inputs");
}

size_t WireHeader::target_bytes(size_t limit) const {
  return frame_bytes(target_shape, count, element_size(), limit, "the targets");
}

}  // namespace fulgur
