// Internal: the pipeline's one way to wait out time (emulated storage, the host stand-in's step) so
// that a stop request is seen: sleeps in slices of at most 20 ms and checks `cancel` between them.
#pragma once

#include <atomic>
#include <cstdint>

namespace stalldx::pipeline {

// Sleeps until `deadline_ns` (CLOCK_MONOTONIC). Returns false when `cancel` (may be null) became true
// first — within one slice.
bool sleep_until(std::int64_t deadline_ns, const std::atomic<bool>* cancel);

}  // namespace stalldx::pipeline
