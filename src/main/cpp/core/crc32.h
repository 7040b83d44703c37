// crc32.h — the one CRC-32 of libte4j (IEEE 802.3, reflected, as zlib and java.util.zip.CRC32
// compute it): the trailer of every byte encoding that crosses a process boundary (RDMA
// metadata, handle wire bytes), so damage in transit is caught before any field is trusted.
#pragma once

#include <cstddef>
#include <cstdint>

namespace te4j {

/// CRC-32 of `length` bytes (0 for none); bytes may be null only when length is 0.
uint32_t crc32(const uint8_t* bytes, size_t length);

}  // namespace te4j
