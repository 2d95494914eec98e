#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fulgur {

/// The first frame of every message between an ensemble client and a
/// server rank: what the message is, whose it is, and the shapes of the
/// frames that follow. Fixed fields, then the per-sample extents as int64,
/// every number little-endian on the wire (so are the samples' values:
/// little_endian() converts them on a big-endian host). A sample message
/// has three frames (this header, the inputs' bytes, the targets'); a
/// goodbye and an acknowledgement (server to client) have the header alone.
/// Nothing is deserialised but these numbers, each checked before use.
///
/// The first 6 bytes (magic, version) are the same in every version: a
/// server answers a client of another version with a header of its own
/// version, and a client that reads another version there stops with one
/// error instead of waiting for acknowledgements that cannot come.
class WireHeader {
 public:
  static constexpr uint32_t kMagic = 0x31474C46;  // "FLG1" read little-endian
  static constexpr uint16_t kVersion = 3;
  static constexpr size_t kFixedBytes = 56;
  static constexpr int kMaxDims = 8;
  static constexpr size_t kKeyBytes = 16;
  using Key = std::array<uint8_t, kKeyBytes>;

  enum class Kind : uint16_t { Samples = 1, Goodbye = 2, Ack = 3 };
  /// Ack flags (in `count`).
  static constexpr uint32_t kGoodbyeHeld = 1, kKeyRefused = 2;
  /// A rank answers a client once per kAnswerEvery of its messages (and within a few milliseconds otherwise).
  static constexpr int64_t kAnswerEvery = 16;
  /// Sample flags (in `flags`): the client waits for this message's acknowledgement (a window smaller than
  /// kAnswerEvery is full, or it is closing), so the rank answers at once rather than within its bound.
  static constexpr uint8_t kAnswerNow = 1;
  enum class DType : uint8_t { Float32 = 1, Float64 = 2 };

  Kind kind = Kind::Samples;
  Key key{};
  uint64_t client_id = 0;
  /// Samples: the client's number of the first sample in the message.
  /// Goodbye: the samples this client handed over for this rank in all.
  uint64_t sequence = 0;
  DType dtype = DType::Float32;
  /// Samples: the samples in the message. Ack: flags (kGoodbyeHeld,
  /// kKeyRefused). Goodbye: the server ranks the client sends to.
  uint32_t count = 0;
  /// Samples: the client's number for this message among those it sent to
  /// this rank (0, 1, ...; a message sent again keeps its number). Ack: the
  /// rank holds every message numbered below this one.
  uint64_t message = 0;
  /// Samples: kAnswerNow or 0. A server of this version that does not know a flag ignores it.
  uint8_t flags = 0;
  /// Per-sample extents (without the count).
  std::vector<int64_t> input_shape, target_shape;

  std::string encode() const;
  /// The protocol version of a frame that begins with the magic but is of
  /// another version than this one's; 0 for one of this version or no header.
  static uint16_t foreign_version(const void* data, size_t size);
  /// Converts `bytes` of values `element` bytes wide between the host's
  /// order and little-endian, in place (nothing to do on a little-endian host).
  static void little_endian(void* data, size_t bytes, size_t element);
  /// Reads and checks a header frame: std::invalid_argument says what is
  /// wrong (size, magic, version, kind, dtype, extents) in one line.
  static WireHeader decode(const void* data, size_t size);
  /// The bytes of the inputs' and the targets' frames; std::invalid_argument
  /// when they exceed `limit`.
  size_t input_bytes(size_t limit) const;
  size_t target_bytes(size_t limit) const;
  size_t element_size() const { return dtype == DType::Float64 ? 8 : 4; }
};

}  // namespace fulgur
