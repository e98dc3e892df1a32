// A stop request (SIGINT / SIGTERM, or a test) that every long wait in stalldx polls, and the one exit
// code convention for it: 130 after SIGINT, 143 after SIGTERM (128 + the signal).
#pragma once

#include <atomic>
#include <csignal>

namespace stalldx {

struct StopFlag {
  std::atomic<bool> requested{false};
  std::atomic<int> signal{0};   // the signal that raised it first (0 = raised by code)
  std::atomic<int> count{0};    // how many times it was raised (a second Ctrl-C escalates: child_process.h)
  std::atomic<bool> from_terminal{false};  // the first raise came from the terminal (the kernel sent it to
                                           // the whole foreground process group, not to us alone)

  // Async-signal-safe (lock-free atomics).
  void raise(int sig, bool terminal = false) noexcept {
    if (count.fetch_add(1, std::memory_order_relaxed) == 0) {
      signal.store(sig, std::memory_order_relaxed);
      from_terminal.store(terminal, std::memory_order_relaxed);
    }
    requested.store(true, std::memory_order_release);
  }
  int times() const noexcept { return count.load(std::memory_order_acquire); }
  bool stopped() const noexcept { return requested.load(std::memory_order_acquire); }
  // 143 after SIGTERM, else 130.
  int exit_code() const noexcept { return signal.load(std::memory_order_relaxed) == SIGTERM ? 143 : 130; }
};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

}  // namespace stalldx
