// CUPTI's dynamic detach (CUPTI's "Dynamic Detach": cuptiFinalize from a callback's exit site). A
// subscriber to the runtime and driver API domains is armed when a window opens (arm_cupti_detach, on the
// thread that opens it, at a step boundary); closing the window only sets a flag (detach_cupti), and an
// API exit after that calls cuptiFinalize, which also removes the subscriber. So no callback is enabled
// or removed while the program's threads run CUDA calls through CUPTI's dispatch: subscribing there, at
// a window's end on the recorder's thread, crashed PyTorch in that dispatch (SIGSEGV in libcupti under
// cuDevicePrimaryCtxGetState, H200 2026-12-06, 2 runs in 6, no finalize yet made). During a window every
// API call pays the callback (two thread-local counts, a shared one per outermost call); after the
// finalize, none does. A collector starting before the finalize calls the request off. The recorder's
// own thread also drives the finalize (drive_cupti_detach: calls of its own whose exits are candidates),
// for a program that makes no CUDA call after a window; in a busy loop a program call's exit comes first
// (example 2 on the H100, 2026-12-07: 2–10 ms on its thread, once a window; set_finalize_observer shows
// where each was made).
//
// When: finalizing while another thread is inside CUPTI's dispatch of a call crashed PyTorch runs
// (SIGSEGV in libcupti on the main thread, H100 2026-12-05, 3 runs in 4, with the finalize on any
// thread's first exit). So the finalize waits for a quiet moment: the exit of an outermost call on a
// thread when no other thread is inside a call. Each thread's nesting is counted from the arming on (the
// subscriber sees every call from then), so at a window's end the count is exact but for calls that
// began before the arming; those are not seen, so the arming must be kArmedBeforeFinalize old (a call
// still running then is a long wait, rarely in CUPTI's dispatch). Before 2026-12-07 the count began at
// the request, which then waited 250 ms: on example 2 a program call's exit finalized ~250 ms after
// each window, and in record_gpu_test's 1/2 windows of 3 ms steps no finalize was ever made (each
// request was called off by the next window first).
#include <cupti.h>
#include <dlfcn.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "api_selection.h"
#include "collectors.h"
#include "stalldx/cuda.h"

namespace stalldx::cuda {

namespace {

constexpr std::int64_t kArmedBeforeFinalize = 50'000'000;  // ns from the arming to a finalize

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::mutex g_mu;                     // the request's state; taken by the callback only while one is pending
std::atomic<bool> g_pending{false};
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<long> g_detaches{0};
std::atomic<std::int64_t> g_armed_ns{0};
std::atomic<std::uint32_t> g_epoch{0};  // one per arming: a thread's depth from an earlier one is void
std::atomic<int> g_inside{0};           // threads inside an outermost call entered since the arming
// The last finalize, for a crash report (read from a signal handler: lock-free atomics only).
std::atomic<long> g_finalize_tid{0};
std::atomic<std::int64_t> g_finalize_begin_ns{0}, g_finalize_end_ns{0};

thread_local std::uint32_t t_epoch = 0;
thread_local int t_depth = 0;  // nesting of this thread's calls seen since the arming (runtime over driver)
thread_local bool t_driver = false;  // this thread drives the finalize (drive_cupti_detach)

// CUDA graphs: a graph replayed after a finalize failed ("unspecified launch failure" at the next
// synchronize; record_gpu_test's cuda_windows, a graph captured before its first step, H100 2026-12-07),
// so once a program is seen capturing, instantiating or launching one (uses_cuda_graphs) CUPTI is never
// finalized again in it: it stays attached with its records off between windows.
std::atomic<bool> g_graphs_seen{false};
// Per domain (runtime, driver), the callback ids of those calls; filled once, before the first
// subscription (under g_mu), read-only after.
std::vector<std::uint8_t> g_graph_ids[2];

void read_graph_ids() {
  if (!g_graph_ids[0].empty()) return;
  g_graph_ids[0] = graph_call_ids(CUPTI_CB_DOMAIN_RUNTIME_API);
  g_graph_ids[1] = graph_call_ids(CUPTI_CB_DOMAIN_DRIVER_API);
}

bool is_graph_call(CUpti_CallbackDomain domain, CUpti_CallbackId id) {
  const int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : -1;
  return d >= 0 && id < g_graph_ids[d].size() && g_graph_ids[d][id] != 0;
}
std::atomic<FinalizeObserver> g_observer{nullptr};

void finalize_now() {
  g_pending.store(false, std::memory_order_release);
  g_subscriber = nullptr;  // cuptiFinalize removes every subscriber
  g_finalize_tid.store(static_cast<long>(::syscall(SYS_gettid)), std::memory_order_relaxed);
  g_finalize_end_ns.store(0, std::memory_order_relaxed);
  const std::int64_t begin = now_ns();
  g_finalize_begin_ns.store(begin, std::memory_order_relaxed);
  if (cuptiFinalize() == CUPTI_SUCCESS) g_detaches.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t end = now_ns();
  g_finalize_end_ns.store(end, std::memory_order_relaxed);
  if (const FinalizeObserver observe = g_observer.load(std::memory_order_acquire); observe != nullptr) observe(begin, end, t_driver);
}

// Every runtime and driver call of every thread, from the arming to the finalize: the nesting is kept
// all along (a thread-local count, and one shared count per outermost call), the finalize looked for
// only while a request is pending.
void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (info == nullptr) return;
  if (!g_graphs_seen.load(std::memory_order_relaxed) && is_graph_call(domain, id)) g_graphs_seen.store(true, std::memory_order_release);
  if (const std::uint32_t epoch = g_epoch.load(std::memory_order_acquire); t_epoch != epoch) {
    t_epoch = epoch;
    t_depth = 0;
  }
  if (info->callbackSite == CUPTI_API_ENTER) {
    if (t_depth++ == 0) g_inside.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  if (t_depth == 0) return;  // the exit of a call that began before the arming
  if (t_depth == 1 && g_pending.load(std::memory_order_acquire) && !g_graphs_seen.load(std::memory_order_acquire) &&
      g_inside.load(std::memory_order_acquire) == 1 &&
      now_ns() - g_armed_ns.load(std::memory_order_relaxed) >= kArmedBeforeFinalize) {
    // Never waits: the request may still be enabling its domains (a CUPTI call, under CUPTI's own locks,
    // which this callback may hold): a later exit finalizes instead.
    std::unique_lock<std::mutex> lock(g_mu, std::try_to_lock);
    if (lock.owns_lock() && g_pending.load(std::memory_order_relaxed) && !g_graphs_seen.load(std::memory_order_acquire) &&
        g_inside.load(std::memory_order_acquire) == 1) {
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
  g_inside.store(0, std::memory_order_relaxed);  // counted afresh: every thread's depth is void from here
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
  g_armed_ns.store(now_ns(), std::memory_order_relaxed);
  read_graph_ids();
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
  if (g_graphs_seen.load(std::memory_order_acquire)) return;                          // CUDA graphs: stays attached
  g_pending.store(true, std::memory_order_release);
}

void cancel_cupti_detach() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_pending.store(false, std::memory_order_release);  // the subscriber stays, armed for the next request
}

bool drive_cupti_detach(const std::atomic<bool>& give_up, std::int64_t max_ns) {
  // A context query of the driver's, found in the process (the driver loaded this library): no link to
  // it. (With cuDriverGetVersion, used before 2026-12-07, the polling alone never made a finalize in 2.3 s
  // on example 2 — its calls reach no callback, or a program thread was inside a call at every one of
  // its exits; not told apart — while a program call's exit made one at once when allowed.)
  using GetCurrent = int (*)(void**);
  static const auto current = reinterpret_cast<GetCurrent>(::dlsym(RTLD_DEFAULT, "cuCtxGetCurrent"));
  const std::int64_t until = now_ns() + max_ns;
  t_driver = true;
  while (g_pending.load(std::memory_order_acquire) && !give_up.load(std::memory_order_relaxed) && now_ns() < until) {
    void* context = nullptr;
    if (current != nullptr) (void)current(&context);  // its exit on this thread may finalize (on_api)
    timespec ts{0, 1'000'000};
    nanosleep(&ts, nullptr);
  }
  t_driver = false;
  return !g_pending.load(std::memory_order_acquire);
}

void set_finalize_observer(FinalizeObserver observer) { g_observer.store(observer, std::memory_order_release); }

bool cuda_graphs_seen() { return g_graphs_seen.load(std::memory_order_acquire); }

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
