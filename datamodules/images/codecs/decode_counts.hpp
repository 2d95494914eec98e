#pragma once

#include <fulgur/datamodules/images/codecs/decode_engine.hpp>

#include <cstdint>
#include <ostream>
#include <string>

namespace fulgur {

/// Images per decoding engine, for one batch, one epoch or one run. `cpu`
/// counts every image the CPU decoded; `fallback` is the part of it that
/// left the batched decoder and went through fulgur's CPU path one image
/// at a time (PNGs, CMYK, what the GPU decoders refused), the slow case a
/// GPU run should not have.
struct DecodeCounts {
  int64_t hardware = 0;
  int64_t cuda = 0;
  int64_t cpu = 0;
  int64_t fallback = 0;

  /// One image decoded by `engine` (None counts nothing).
  void add(DecodeEngine engine);
  /// One image decoded one by one on the CPU (cpu and fallback).
  void add_fallback();
  DecodeCounts& operator+=(const DecodeCounts& other);
  int64_t total() const { return hardware + cuda + cpu; }
  bool operator==(const DecodeCounts& other) const = default;
  /// `hardware 250, cuda 4, cpu 2 (2 one by one)`.
  std::string to_string() const;
};

inline std::ostream& operator<<(std::ostream& out, const DecodeCounts& counts) { return out << counts.to_string(); }

}  // namespace fulgur
