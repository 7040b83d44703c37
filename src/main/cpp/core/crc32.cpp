// crc32.cpp — table-driven CRC-32; the table is built once, on first use.
#include "core/crc32.h"

namespace te4j {
namespace {

struct Crc32Table {
  uint32_t entry[256];
  Crc32Table() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      entry[i] = c;
    }
  }
};

}  // namespace

uint32_t crc32(const uint8_t* bytes, size_t length) {
  static const Crc32Table table;
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < length; ++i) c = table.entry[(c ^ bytes[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

}  // namespace te4j
