// The one clock of every record stalldx writes or reads: CLOCK_MONOTONIC in nanoseconds (host ranges,
// CUPTI's timestamps through its timestamp callback, the injection's parts, window marks, live lines).
#pragma once

#include <time.h>

#include <cstdint>

namespace stalldx {

// Any clock_gettime clock in nanoseconds.
inline std::int64_t clock_ns(clockid_t clock) noexcept {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::int64_t monotonic_ns() noexcept { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace stalldx
