// CUPTI's dynamic detach (CUPTI's "Dynamic Detach": cuptiFinalize from a callback's exit site). A
// subscriber to the runtime and driver API domains is armed when a window opens (arm_cupti_detach, on the
// thread that opens it, at a step boundary); closing the window only sets a flag (detach_cupti), and an
// API exit after that calls cuptiFinalize, which also removes the subscriber. So no callback is enabled
// or removed while the program's threads run CUDA calls through CUPTI's dispatch: subscribing there, at
// a window's end on the recorder's thread, crashed PyTorch in that dispatch (SIGSEGV in libcupti under
// cuDevicePrimaryCtxGetState, H200 2026-12-06, 2 runs in 6, no finalize yet made). During a window every
// API call pays the callback (an early return while no detach is pending); after the finalize, none does.
// A collector starting before the finalize calls the request off. The recorder's own thread drives the
// finalize (drive_cupti_detach: calls of its own whose exits are candidates), so that the finalize, a
// heavy call, is made there rather than inside one of the program's calls.
//
// When: finalizing while another thread is inside CUPTI's dispatch of a call crashed PyTorch runs
// (SIGSEGV in libcupti on the main thread, H100 2026-12-05, 3 runs in 4, with the finalize on any
// thread's first exit). So the finalize waits for a quiet moment: the exit of an outermost call on a
// thread when no other thread is inside a call that began after the request, and only once the request
// is kQuietBeforeFinalize old (a call that began before the request and is still running then is not
// seen: a long wait, rarely in CUPTI's dispatch).
#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "collectors.h"
#include "stalldx/cuda.h"

namespace stalldx::cuda {

namespace {

constexpr std::int64_t kQuietBeforeFinalize = 250'000'000;  // ns after the request

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::mutex g_mu;                     // the request's state; taken by the callback only while one is pending
std::atomic<bool> g_pending{false};
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<long> g_detaches{0};
std::atomic<std::int64_t> g_requested_ns{0};
std::atomic<std::uint32_t> g_epoch{0};  // one per request: a thread's depth from an earlier one is void
std::atomic<int> g_inside{0};           // threads inside an outermost call entered during this request
// The last finalize, for a crash report (read from a signal handler: lock-free atomics only).
std::atomic<long> g_finalize_tid{0};
std::atomic<std::int64_t> g_finalize_begin_ns{0}, g_finalize_end_ns{0};

thread_local std::uint32_t t_epoch = 0;
thread_local int t_depth = 0;  // nesting of this thread's calls seen in this request (runtime over driver)

void finalize_now() {
  g_pending.store(false, std::memory_order_release);
  g_subscriber = nullptr;  // cuptiFinalize removes every subscriber
  g_finalize_tid.store(static_cast<long>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  g_finalize_end_ns.store(0, std::memory_order_relaxed);
  g_finalize_begin_ns.store(now_ns(), std::memory_order_relaxed);
  if (cuptiFinalize() == CUPTI_SUCCESS) g_detaches.fetch_add(1, std::memory_order_relaxed);
  g_finalize_end_ns.store(now_ns(), std::memory_order_relaxed);
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info == nullptr || !g_pending.load(std::memory_order_acquire)) return;
  if (const std::uint32_t epoch = g_epoch.load(std::memory_order_acquire); t_epoch != epoch) {
    t_epoch = epoch;
    t_depth = 0;
  }
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (t_depth++ == 0) g_inside.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  if (t_depth == 0) return;  // the exit of a call that began before the request
  if (t_depth == 1 && g_inside.load(std::memory_order_acquire) == 1 &&
      now_ns() - g_requested_ns.load(std::memory_order_relaxed) >= kQuietBeforeFinalize) {
    // Never waits: the request may still be enabling its domains (a CUPTI call, under CUPTI's own locks,
    // which this callback may hold): a later exit finalizes instead.
    std::unique_lock<std::mutex> lock(g_mu, std::try_to_lock);
    if (lock.owns_lock() && g_pending.load(std::memory_order_relaxed) && g_inside.load(std::memory_order_acquire) == 1) {
      finalize_now();
      t_depth = 0;
      g_inside.store(0, std::memory_order_release);
      return;
    }
  }
  if (--t_depth == 0) g_inside.fetch_sub(1, std::memory_order_acq_rel);
}

// Async-signal-safe: decimal digits of v into fd.
void write_number(int fd, std::int64_t v) {
  char buf[24];
  int n = sizeof buf;
  const bool negative = v < 0;
  std::uint64_t u = negative ? static_cast<std::uint64_t>(-(v + 1)) + 1 : static_cast<std::uint64_t>(v);
  do {
    buf[--n] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0 && n > 1);
  if (negative) buf[--n] = '-';
  (void)!::write(fd, buf + n, sizeof buf - n);
}

void write_text(int fd, const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  (void)!::write(fd, s, n);
}

}  // namespace

void arm_cupti_detach() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_subscriber != nullptr) return;
  if (cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(&on_api), nullptr) != CUPTI_SUCCESS) {
    g_subscriber = nullptr;
    return;  // another subscriber holds CUPTI (a tool of the program's own): windows end disabled, attached
  }
  cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

void detach_cupti() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pending.load(std::memory_order_relaxed) || g_subscriber == nullptr) return;  // not armed: stays attached
  g_inside.store(0, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  g_requested_ns.store(now_ns(), std::memory_order_relaxed);
  g_pending.store(true, std::memory_order_release);
}

void cancel_cupti_detach() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_pending.store(false, std::memory_order_release);  // the subscriber stays, armed for the next request
}

bool drive_cupti_detach(const std::atomic<bool>& give_up, std::int64_t max_ns) {
  // The driver's own entry point, found in the process (the driver loaded this library): no link to it.
  using GetVersion = int (*)(int*);
  static const auto version = reinterpret_cast<GetVersion>(::dlsym(RTLD_DEFAULT, "cuDriverGetVersion"));
  const std::int64_t until = now_ns() + max_ns;
  while (g_pending.load(std::memory_order_acquire) && !give_up.load(std::memory_order_relaxed) && now_ns() < until) {
    int v = 0;
    if (version != nullptr) (void)version(&v);  // its exit on this thread may finalize (on_api)
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
  return !g_pending.load(std::memory_order_acquire);
}

long cupti_detaches() { return g_detaches.load(std::memory_order_relaxed); }

void write_detach_state(int fd) {
  write_text(fd, "stalldx: CUPTI detaches ");
  write_number(fd, g_detaches.load(std::memory_order_relaxed));
  write_text(fd, g_pending.load(std::memory_order_relaxed) ? ", one requested" : "");
  if (const long tid = g_finalize_tid.load(std::memory_order_relaxed); tid != 0) {
    const std::int64_t now = now_ns(), begin = g_finalize_begin_ns.load(std::memory_order_relaxed),
                       end = g_finalize_end_ns.load(std::memory_order_relaxed);
    write_text(fd, "; the last finalize on thread ");
    write_number(fd, tid);
    write_text(fd, tid == static_cast<long>(::syscall(SYS_gettid)) ? " (this one)" : " (another)");
    write_text(fd, ", began ");
    write_number(fd, (now - begin) / 1000);
    write_text(fd, end == 0 ? " us ago, not finished" : " us ago, took ");
    if (end != 0) {
      write_number(fd, (end - begin) / 1000);
      write_text(fd, " us");
    }
  }
  write_text(fd, "\n");
}

}  // namespace stalldx::cuda
