#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fulgur {

/// Appends protobuf wire-format fields to a byte string: just enough of the
/// encoding to write TensorBoard's `Event` messages without depending on
/// the protobuf library. Fields are written in call order; nested messages
/// are encoded into their own ProtoEncoder and added with message().
class ProtoEncoder {
 public:
  /// int32/int64/uint64/bool/enum fields (wire type 0).
  ProtoEncoder& varint(int field, uint64_t value);
  /// double fields (wire type 1).
  ProtoEncoder& float64(int field, double value);
  /// float fields (wire type 5).
  ProtoEncoder& float32(int field, float value);
  /// string and bytes fields (wire type 2).
  ProtoEncoder& bytes(int field, std::string_view value);
  /// An embedded message (wire type 2).
  ProtoEncoder& message(int field, const ProtoEncoder& nested) { return bytes(field, nested.data()); }
  /// A packed `repeated double` field.
  ProtoEncoder& packed_float64(int field, const std::vector<double>& values);

  const std::string& data() const { return out_; }

 private:
  void key(int field, int wire_type);
  void raw_varint(uint64_t value);
  void raw_fixed(uint64_t bits, int byte_count);

  std::string out_;
};

}  // namespace fulgur
