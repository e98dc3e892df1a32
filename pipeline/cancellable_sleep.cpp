#include "cancellable_sleep.h"

#include <time.h>

#include <algorithm>

#include "stalldx/profiler.h"

namespace stalldx::pipeline {

bool sleep_until(std::int64_t deadline, const std::atomic<bool>* cancel) {
  constexpr std::int64_t kSliceNs = 20'000'000;
  for (;;) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) return false;
    const std::int64_t now = now_ns();
    if (now >= deadline) return true;
    const std::int64_t until = std::min(deadline, now + kSliceNs);
    const timespec ts{static_cast<time_t>(until / 1'000'000'000), static_cast<long>(until % 1'000'000'000)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);  // EINTR: loop, check, sleep again
  }
}

}  // namespace stalldx::pipeline
