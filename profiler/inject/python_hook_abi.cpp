// The C entry points the Python hook (profiler/python/stalldx_hook) calls through ctypes, in a process
// that `stalldx record` started: names registered once, one complete range per call, in NVTX domain
// "stalldx" with category = role + 1 (so the merger gives it its role, as for the profiler's mirror).
// Ids are per process: a forked child registers its names again (the hook clears its cache at fork).
// Contract: `name` is a NUL-terminated string the caller keeps alive for the call only; the clocks are
// CLOCK_MONOTONIC ns (time.monotonic_ns() in Python) and the calling thread's CPU/run-queue ns.
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "part_writer.h"
#include "stalldx/record/part_format.h"

using namespace stalldx::inject;

extern "C" {

__attribute__((visibility("default"))) std::uint32_t stalldx_py_name(const char* name) {
  return name_id(name != nullptr ? name : "");
}

// out[0] = now, out[1] = the thread's CPU time, out[2] = its run-queue delay (-1 unavailable).
__attribute__((visibility("default"))) void stalldx_py_clocks(std::int64_t* out) {
  if (out != nullptr) thread_clocks(out[0], out[1], out[2]);
}

__attribute__((visibility("default"))) void stalldx_py_range(std::uint32_t name, std::uint32_t role, std::int64_t payload,
                                                             std::int64_t begin_ns, std::int64_t end_ns, std::int64_t cpu_ns,
                                                             std::int64_t runq_ns) {
  // The domain's id is per process (a forked child numbers its own): registered again in a new process.
  static std::atomic<std::int64_t> registered_pid{0};
  static std::atomic<std::uint32_t> domain{0};
  const std::int64_t pid = getpid();
  if (registered_pid.load(std::memory_order_acquire) != pid) {
    domain.store(domain_id(stalldx::record::kStalldxDomain), std::memory_order_relaxed);
    registered_pid.store(pid, std::memory_order_release);
  }
  complete(name, domain.load(std::memory_order_relaxed), role + 1, payload, begin_ns, end_ns, cpu_ns, runq_ns);
}

__attribute__((visibility("default"))) void stalldx_py_note(const char* text) { note_python_hook(text != nullptr ? text : ""); }

// 1 when this process records (STALLDX_RECORD_DIR set), else 0: the hook stays off.
__attribute__((visibility("default"))) int stalldx_py_enabled() { return enabled() ? 1 : 0; }
}
