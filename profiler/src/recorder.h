// Internal: the per-thread bounded record buffers and the registry the session drains.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stalldx/profiler.h"

namespace stalldx::detail {

// POD mirror of HostRange without the thread (implicit: the buffer's) so that `new RawRange[n]` leaves
// pages untouched until written — a large bound costs only what is used.
struct RawRange {  // one cache line
  std::int64_t begin_ns, end_ns, step, batch, sample, cpu_ns;
  std::uint64_t bytes;
  NameId name;
  // Run-queue delay inside the range as a fraction of its wall time, in 1/kRunqScale units (the
  // record stays one cache line); kRunqNotSampled = not sampled.
  std::uint16_t runq_frac;
  Role role;
};
static_assert(sizeof(RawRange) == 64);
inline constexpr std::uint16_t kRunqScale = 65534, kRunqNotSampled = 65535;
struct RawCounter {
  std::int64_t ts_ns;
  double value;
  NameId name;
};

// One thread's buffers for one session. Single writer (the owning thread); the drainer reads up to the
// published count (release/acquire), after recording stopped.
// Record storage: anonymous memory, committed page by page as written (transparent huge pages where
// the kernel allows, so first-touch faults are rare), unmapped on destruction.
template <typename T>
struct RecordArray {
  T* data = nullptr;
  std::size_t bytes = 0;
  RecordArray(std::size_t n, bool populate);
  ~RecordArray();
  RecordArray(const RecordArray&) = delete;
  RecordArray& operator=(const RecordArray&) = delete;
  T& operator[](std::size_t i) { return data[i]; }
  const T& operator[](std::size_t i) const { return data[i]; }
};

struct ThreadBuffer {
  std::int64_t os_tid = 0;
  std::uint64_t pthread_id = 0;
  std::string name;
  // /proc/thread-self/schedstat of the owning thread, opened at registration (pread on the range path,
  // no allocation); -1 where the kernel does not offer it. Closed with the buffer.
  int schedstat_fd = -1;
  std::unique_ptr<RecordArray<RawRange>> ranges;
  std::unique_ptr<RecordArray<RawCounter>> counters;
  std::size_t range_cap = 0, counter_cap = 0;
  std::atomic<std::size_t> range_count{0}, counter_count{0};
  std::atomic<std::uint64_t> range_dropped{0}, counter_dropped{0};
  ThreadBuffer() = default;
  ThreadBuffer(const ThreadBuffer&) = delete;
  ThreadBuffer& operator=(const ThreadBuffer&) = delete;
  ~ThreadBuffer();
};

struct SessionState {
  std::atomic<bool> recording{false};
  std::atomic<std::uint64_t> generation{0};
  bool cpu_time = false;
  bool nvtx = false;               // range_push/pop set (the NVTX mirror runs)
  // Set by Session::start before `recording` is released, cleared after it is withdrawn; relaxed loads
  // on the range path.
  std::atomic<void (*)(NameId, Role, std::int64_t) noexcept> range_push{nullptr};
  std::atomic<void (*)() noexcept> range_pop{nullptr};
  std::atomic<void (*)(std::int64_t) noexcept> step_push{nullptr};
  std::atomic<void (*)() noexcept> step_pop{nullptr};
  bool prefault = true;
  std::size_t range_cap = 0, counter_cap = 0;
  std::mutex mu;  // guards buffers (registration only; never taken while recording a range)
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};
SessionState& session_state();

// The calling thread's buffer for the current session, registering it on first use; nullptr if the
// session is not recording.
ThreadBuffer* thread_buffer() noexcept;

NameTable name_table();  // snapshot of every registered name, index = NameId

}  // namespace stalldx::detail
