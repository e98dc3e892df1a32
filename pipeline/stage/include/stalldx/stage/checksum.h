// Order-sensitive 64-bit checksum of a batch, computed identically on host and device to prove a slot
// was copied whole and not overwritten in flight: sum over 64-bit words w_i of (w_i + 1) * (2i + 1) mod 2^64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace stalldx::pipeline {

inline std::uint64_t host_checksum(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t sum = 0;
  const std::size_t words = bytes / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, p + i * 8, 8);
    sum += (w + 1) * (2 * static_cast<std::uint64_t>(i) + 1);
  }
  return sum;
}

}  // namespace stalldx::pipeline
