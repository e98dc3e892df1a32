// stalldx instrumentation API: the one header a pipeline author includes.
//
//   stalldx::Session session;                      // one per process, before any range
//   session.start({});                             // collectors per SessionOptions
//   { STALLDX_RANGE(decode, "decode", ids); ... }  // a range on this thread, role `decode`
//   session.stop(); session.write("trace.json");   // Chrome Trace JSON, opens in Perfetto
//
// Contract: ranges are recorded into a bounded buffer owned by the calling thread; recording takes no
// lock, allocates nothing and formats nothing. A range that does not fit is dropped and counted. All
// timestamps are CLOCK_MONOTONIC nanoseconds (stalldx::now_ns()). Build with STALLDX_PROFILING=0 and
// the macros compile to nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <string_view>

#include "stalldx/collector.h"
#include "stalldx/roles.h"
#include "stalldx/status.h"
#include "stalldx/trace_model.h"

#ifndef STALLDX_PROFILING
#define STALLDX_PROFILING 1
#endif

namespace stalldx {

// CLOCK_MONOTONIC in nanoseconds: the one clock of every record.
std::int64_t now_ns() noexcept;

// A registered name. Register once (at static-init or first use), reuse forever; ids are stable for the
// process lifetime. Thread-safe; takes a lock, so never call it on a hot path.
using NameId = std::uint32_t;
NameId register_name(std::string_view name);

// Ids a range carries; -1 means "not applicable".
struct RangeIds {
  std::int64_t step = -1;
  std::int64_t batch = -1;
  std::int64_t sample = -1;
};

namespace detail {
// Single-writer state of one in-flight range. Lives on the recording thread's stack.
struct ThreadBuffer;
struct OpenRange {
  ThreadBuffer* buffer;        // the recording thread's buffer, taken at begin; null = not recording
  std::int64_t begin_ns;
  std::int64_t cpu_begin_ns;   // thread CPU clock, -1 when not sampled
  std::int64_t runq_begin_ns;  // thread's run-queue delay so far (schedstat), -1 when not sampled
  NameId name;
  Role role;
  RangeIds ids;
  std::uint64_t bytes;
};
void begin_range(OpenRange& r) noexcept;
void end_range(OpenRange& r) noexcept;
}  // namespace detail

// RAII host range. Cannot be copied, moved or heap-allocated: it lives exactly as long as its scope.
class Range {
 public:
  Range(NameId name, Role role, RangeIds ids = {}) noexcept {
    r_.name = name; r_.role = role; r_.ids = ids; r_.bytes = 0;
    detail::begin_range(r_);
  }
  ~Range() { detail::end_range(r_); }
  // Bytes moved by the work inside (e.g. a read's size); reported with the range.
  void set_bytes(std::uint64_t bytes) noexcept { r_.bytes = bytes; }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;
  Range(Range&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

 private:
  detail::OpenRange r_;
};

// Step mark: a `step` range that also tells the device collectors which step the CUDA work submitted
// inside it belongs to (CUPTI external correlation id = step). One per training step, on the consumer.
class StepMark {
 public:
  StepMark(std::int64_t step, std::int64_t batch) noexcept;
  ~StepMark();
  StepMark(const StepMark&) = delete;
  StepMark& operator=(const StepMark&) = delete;
  static void* operator new(std::size_t) = delete;

 private:
  detail::OpenRange r_;
};

// A counter sample (e.g. ready batches in the prefetch queue) at now_ns(). Lock-free, bounded like ranges.
void counter(NameId name, double value) noexcept;

// Names the calling thread's lane in the trace ("worker", "consumer"). Takes a lock: call once per thread.
void set_thread_name(std::string_view name);

struct SessionOptions {
  bool host = true;          // record host ranges and counters
  bool cpu_time = true;      // thread CPU time + run-queue delay on coarse roles (retrieval, decode, wait_batch, step, sync)
  bool nvtx = true;          // mirror ranges to NVTX domain "stalldx" (only when built with CUDA)
  bool cupti = true;         // CUPTI runtime + device activity (only when a CUDA collector was installed)
  bool cupti_driver = false; // also CUDA driver API calls: libraries (cuBLAS, cuDNN) launch through them
  bool cupti_driver_work = false;  // of the driver API only the calls that launch, copy, set, wait or
                                   // allocate (lighter: ignored when cupti_driver is set)
  bool cupti_sync = true;    // synchronization activity (which stream/event a sync waited on)
  bool cupti_every_call = false;  // also API calls that only query state (cudaGetLastError, cudaFuncGetAttributes,
                                  // cuCtxGetCurrent, ...): a launch-heavy program makes thousands a step, each a
                                  // record; off, the calls that launch, copy, set, sync or allocate are all kept
  std::size_t ranges_per_thread = 1u << 17;   // bound of each thread's range buffer (64 B a range: 8 MiB)
  std::size_t counters_per_thread = 1u << 16; // bound of each thread's counter buffer (24 B a sample)
  bool prefault = true;      // commit each thread's buffers when it registers, not on the range path
};

// The recording session. One at a time per process; start() after threads exist is fine (threads
// register their buffers on first record). stop() must be called before write()/take_trace().
class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Hands a collector to the session, which owns it from now on. Before start(); not while recording.
  Status add_collector(std::unique_ptr<Collector> collector);
  // Starts host recording and every collector. A collector that fails to start is noted in the trace
  // metadata ("<name>_warning") and left out; the session still records.
  Status start(const SessionOptions& options);
  // Stops every collector and drains all buffers into the trace model. Idempotent.
  void stop();
  // Metadata the trace will carry (the run's config, device, ...). Call any time before write().
  void set_meta(std::string key, std::string value);
  void set_interrupted(bool interrupted, std::int64_t steps_completed);
  // The drained trace; valid after stop().
  const Trace& trace() const { return trace_; }
  Trace& mutable_trace() { return trace_; }
  Status write(const std::string& path) const;

 private:
  Trace trace_;
  SessionOptions options_;
  std::vector<std::unique_ptr<Collector>> collectors_;
  std::vector<Collector*> started_;
  bool running_ = false;
};

}  // namespace stalldx

#if STALLDX_PROFILING
#define STALLDX_CAT2(a, b) a##b
#define STALLDX_CAT(a, b) STALLDX_CAT2(a, b)
// STALLDX_RANGE(role, "name", ids?) — a Range for the rest of the scope; the name is registered once.
#define STALLDX_RANGE(role, name, ...)                                                          \
  static const ::stalldx::NameId STALLDX_CAT(stalldx_name_, __LINE__) = ::stalldx::register_name(name); \
  ::stalldx::Range STALLDX_CAT(stalldx_range_, __LINE__)(STALLDX_CAT(stalldx_name_, __LINE__),     \
                                                         ::stalldx::Role::role __VA_OPT__(, ) __VA_ARGS__)
// STALLDX_RANGE_VAR(var, role, "name", ids?) — the same, with a name so the body can call var.set_bytes().
#define STALLDX_RANGE_VAR(var, role, name, ...)                                                  \
  static const ::stalldx::NameId STALLDX_CAT(stalldx_name_, __LINE__) = ::stalldx::register_name(name); \
  ::stalldx::Range var(STALLDX_CAT(stalldx_name_, __LINE__), ::stalldx::Role::role __VA_OPT__(, ) __VA_ARGS__)
#define STALLDX_COUNTER(name, value)                                                              \
  do {                                                                                            \
    static const ::stalldx::NameId stalldx_counter_name = ::stalldx::register_name(name);         \
    ::stalldx::counter(stalldx_counter_name, (value));                                            \
  } while (0)
#else
#define STALLDX_RANGE(role, name, ...) ((void)0)
namespace stalldx { struct NoRange { void set_bytes(std::uint64_t) noexcept {} }; }
#define STALLDX_RANGE_VAR(var, role, name, ...) ::stalldx::NoRange var
#define STALLDX_COUNTER(name, value) ((void)0)
#endif
