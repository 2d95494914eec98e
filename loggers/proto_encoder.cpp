#include <fulgur/loggers/proto_encoder.hpp>

#include <cstring>

namespace fulgur {

void ProtoEncoder::raw_varint(uint64_t value) {
  while (value >= 0x80) {
    out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out_.push_back(static_cast<char>(value));
}

void ProtoEncoder::raw_fixed(uint64_t bits, int byte_count) {
  for (int i = 0; i < byte_count; ++i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // little endian
}

void ProtoEncoder::key(int field, int wire_type) {
  raw_varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

ProtoEncoder& ProtoEncoder::varint(int field, uint64_t value) {
  key(field, 0);
  raw_varint(value);
  return *this;
}

ProtoEncoder& ProtoEncoder::float64(int field, double value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  key(field, 1);
  raw_fixed(bits, 8);
  return *this;
}

ProtoEncoder& ProtoEncoder::float32(int field, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  key(field, 5);
  raw_fixed(bits, 4);
  return *this;
}

ProtoEncoder& ProtoEncoder::bytes(int field, std::string_view value) {
  key(field, 2);
  raw_varint(value.size());
  out_.append(value);
  return *this;
}

ProtoEncoder& ProtoEncoder::packed_float64(int field, const std::vector<double>& values) {
  key(field, 2);
  raw_varint(values.size() * 8);
  for (const double value : values) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    raw_fixed(bits, 8);
  }
  return *this;
}

}  // namespace fulgur
