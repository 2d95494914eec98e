#pragma once

#include <cstdint>
#include <string_view>

namespace fulgur {

/// CRC-32C (Castagnoli), the checksum of TFRecord framing.
uint32_t crc32c(std::string_view data);

/// TFRecord's masked form of a CRC: a checksum of data that itself holds
/// checksums would otherwise be weak, so the CRC is rotated and offset.
uint32_t masked_crc32c(std::string_view data);

}  // namespace fulgur
