#include <fulgur/loggers/crc32c.hpp>

#include <array>

namespace fulgur {
namespace {

std::array<uint32_t, 256> make_table() {
  constexpr uint32_t kReflectedPolynomial = 0x82f63b78;
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kReflectedPolynomial : crc >> 1;
    table[i] = crc;
  }
  return table;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_table();
  uint32_t crc = 0xffffffff;
  for (const char c : data) crc = table[(crc ^ static_cast<uint8_t>(c)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffff;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace fulgur
