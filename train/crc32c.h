// CRC-32C (Castagnoli), the checksum of TFRecord framing, and TensorFlow's "masked" form of it.
// Debian 12 has no libcrc32c package, so this is a small table-driven implementation, checked in
// tests/train against the published check values (RFC 3720 B.4).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ds {

uint32_t crc32c(const void* data, size_t n);

// TensorFlow stores rotate_right(crc, 15) + 0xa282ead8 so that a CRC computed over data that
// itself contains CRCs does not degenerate (tensorflow/core/lib/hash/crc32c.h).
inline uint32_t masked_crc32c(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

}  // namespace ds
