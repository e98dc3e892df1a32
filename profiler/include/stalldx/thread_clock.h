// The calling thread's CPU clock and run-queue delay, for range boundaries. Header-only (the injection
// library uses it without linking the profiler). Linux: the delay is the second field of
// /proc/thread-self/schedstat — time spent runnable but not running — read with one pread on an fd the
// thread opened itself (open_thread_schedstat); for the calling thread it is exact up to its last
// switch-in, since a running thread accrues none.
#pragma once

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cstdint>

#include "stalldx/clock.h"

namespace stalldx {

inline std::int64_t thread_cpu_ns() noexcept { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// -1 where the kernel does not offer schedstat. Must be called on the thread it is for.
inline int open_thread_schedstat() noexcept { return ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC); }

// ns the thread behind `fd` spent runnable but not running so far; -1 if unavailable. No allocation.
inline std::int64_t thread_runq_ns(int fd) noexcept {
  if (fd < 0) return -1;
  char buf[96];
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  const char* p = buf;
  const char* end = buf + n;
  while (p < end && *p != ' ') ++p;  // skip the on-CPU time
  std::int64_t v = -1;
  if (p < end) std::from_chars(p + 1, end, v);
  return v;
}

}  // namespace stalldx
