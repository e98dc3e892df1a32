// A stop request (SIGINT / SIGTERM, or a test) that every long wait in stalldx polls, and the one exit
// code convention for it: 130 after SIGINT, 143 after SIGTERM (128 + the signal).
#pragma once

#include <atomic>
#include <csignal>

namespace stalldx {

struct StopFlag {
  std::atomic<bool> requested{false};
  std::atomic<int> signal{0};   // the signal that raised it (0 = raised by code)

  // Async-signal-safe (lock-free atomics).
  void raise(int sig) noexcept {
    signal.store(sig, std::memory_order_relaxed);
    requested.store(true, std::memory_order_release);
  }
  bool stopped() const noexcept { return requested.load(std::memory_order_acquire); }
  // 143 after SIGTERM, else 130.
  int exit_code() const noexcept { return signal.load(std::memory_order_relaxed) == SIGTERM ? 143 : 130; }
};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

}  // namespace stalldx
