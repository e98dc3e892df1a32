// The trace model: plain records every collector converts to and the diagnosis reads (DESIGN.md
// "Records"). All timestamps are CLOCK_MONOTONIC nanoseconds. Names are indices into Trace::names.
// No CUDA, no TBB: this header is all that diagnose/ depends on.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stalldx/name_table.h"
#include "stalldx/roles.h"

namespace stalldx {

struct ThreadInfo {
  std::uint32_t id = 0;        // lane id in this trace (dense, 0-based)
  std::int64_t os_tid = 0;     // gettid()
  std::string name;            // "consumer", "worker", ...
  std::uint64_t pthread_id = 0;  // pthread_self(), to match collectors that report it instead of the tid
  std::int64_t pid = 0;        // OS process of a recorded program (stalldx record); 0 = the recording process
  std::string process;         // that process's name (its command line), shown as its lane group
  bool operator==(const ThreadInfo&) const = default;
};

struct HostRange {
  std::int64_t begin_ns = 0, end_ns = 0;
  std::uint32_t thread = 0;    // ThreadInfo::id
  std::uint32_t name = 0;      // index into Trace::names
  Role role = Role::user;
  std::int64_t step = -1, batch = -1, sample = -1;
  std::int64_t cpu_ns = -1;    // thread CPU time inside the range; -1 = not sampled
  std::int64_t runq_ns = -1;   // time the thread was runnable but not running inside the range; -1 = not sampled
  std::uint64_t bytes = 0;
  bool operator==(const HostRange&) const = default;
};

struct RuntimeCall {
  std::int64_t begin_ns = 0, end_ns = 0;
  std::uint32_t thread = 0;
  std::uint32_t name = 0;      // API name, e.g. cudaMemcpyAsync
  std::uint64_t correlation = 0;  // CUPTI correlation id
  std::int64_t step = -1;      // from the external correlation pushed by StepMark; -1 = none
  bool operator==(const RuntimeCall&) const = default;
};

enum class ActivityKind : std::uint8_t { kernel, memcpy_h2d, memcpy_d2h, memcpy_d2d, memcpy_other, memset, sync, overhead, standin };
enum class MemKind : std::uint8_t { none, pinned, pageable, device, managed, unknown };

struct DeviceActivity {
  std::int64_t begin_ns = 0, end_ns = 0;
  std::int32_t device = 0;     // CUDA device ordinal; -1 = the host stand-in of --device none
  std::uint32_t stream = 0;
  ActivityKind kind = ActivityKind::kernel;
  std::uint32_t name = 0;
  std::uint64_t bytes = 0;
  MemKind host_mem = MemKind::none;  // for copies: the host side's memory kind
  std::uint64_t correlation = 0;     // 0 = none (stand-in, overhead records)
  std::int64_t step = -1;            // resolved from correlation -> external id; -1 = unmatched
  bool operator==(const DeviceActivity&) const = default;
};

struct CounterSample {
  std::int64_t ts_ns = 0;
  std::uint32_t name = 0;
  double value = 0;
  bool operator==(const CounterSample&) const = default;
};

// The host the trace was recorded on, as far as CPU contention goes (advice reads it). -1 = unknown.
struct HostFacts {
  int cpus = -1;                 // online CPUs
  int usable_cpus = -1;          // CPUs this process may run on (affinity / cgroup cpuset)
  double load_1m_start = -1;     // 1-minute load average when recording started / stopped
  double load_1m_end = -1;
  // The CPUs a recorded program could use: the usable ones where known, else all online; -1 = unknown.
  int cores() const { return usable_cpus > 0 ? usable_cpus : cpus; }
  bool operator==(const HostFacts&) const = default;
};

struct TraceMeta {
  std::map<std::string, std::string> config;   // the run's options as key -> value text
  bool host = false, cpu_time = false, nvtx = false, cupti = false;  // collectors enabled
  std::string clock = "CLOCK_MONOTONIC";
  std::string device = "none";                 // device name or "none (host stand-in)"
  std::int64_t origin_ns = 0;                  // file timestamps are relative to this
  std::uint64_t dropped_host = 0, dropped_counters = 0, dropped_device = 0;
  std::uint64_t unmatched_device = 0;          // device records with no step
  std::uint64_t skipped_events = 0;            // events a reader could not use (e.g. before the origin)
  bool interrupted = false;
  bool standin = false;                        // the host stand-in played the device (run --device none)
  std::int64_t steps_completed = -1;
  HostFacts host_facts;
  bool operator==(const TraceMeta&) const = default;
};

struct Trace {
  NameTable names;
  std::vector<ThreadInfo> threads;
  std::vector<HostRange> ranges;
  std::vector<RuntimeCall> calls;
  std::vector<DeviceActivity> activities;
  std::vector<CounterSample> counters;
  TraceMeta meta;

  std::uint32_t intern(std::string_view name) { return names.intern(name); }
  const std::string& name(std::uint32_t id) const { return names[id]; }
  bool operator==(const Trace&) const = default;
};

const char* activity_kind_name(ActivityKind kind) noexcept;
bool activity_kind_from_name(const std::string& s, ActivityKind& out) noexcept;
const char* mem_kind_name(MemKind kind) noexcept;
bool mem_kind_from_name(const std::string& s, MemKind& out) noexcept;
inline bool is_memcpy(ActivityKind k) {
  return k == ActivityKind::memcpy_h2d || k == ActivityKind::memcpy_d2h || k == ActivityKind::memcpy_d2d ||
         k == ActivityKind::memcpy_other;
}
// Busy-counting device work: kernels, copies, memsets and the host stand-in (not sync/overhead records).
inline bool is_device_work(ActivityKind k) {
  return k != ActivityKind::sync && k != ActivityKind::overhead;
}

}  // namespace stalldx
