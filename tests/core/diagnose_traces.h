// Synthetic traces for the diagnosis tests, in milliseconds: a Builder of ranges, calls and device work,
// an input-bound loop, and a count of steady verdicts.
#pragma once

#include <cstdint>

#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose::test_traces {

inline constexpr std::int64_t kMs = 1'000'000;

// Builds traces in milliseconds: consumer = thread 0, one worker = thread 1.
struct Builder {
  Trace t;
  std::uint64_t next_corr = 1;
  Builder(int warmup = 0) {
    t.threads = {{0, 100, "consumer"}, {1, 101, "worker"}};
    t.meta.host = t.meta.cupti = t.meta.cpu_time = true;
    t.meta.device = "test GPU";
    t.meta.config["warmup"] = std::to_string(warmup);
  }
  static std::int64_t ns(double ms) { return static_cast<std::int64_t>(ms * kMs); }
  void range(Role role, const char* name, double b, double e, std::int64_t step = -1, std::int64_t batch = -1,
             std::uint32_t thread = 0, double cpu_ms = -1, double runq_ms = -1) {
    HostRange r;
    r.begin_ns = ns(b);
    r.end_ns = ns(e);
    r.thread = thread;
    r.name = t.intern(name);
    r.role = role;
    r.step = step;
    r.batch = batch;
    r.cpu_ns = cpu_ms < 0 ? -1 : ns(cpu_ms);
    r.runq_ns = runq_ms < 0 ? -1 : ns(runq_ms);
    t.ranges.push_back(r);
  }
  // A runtime call on the consumer and the device work it launched.
  void launch(const char* api, double cb, double ce, ActivityKind kind, const char* name, double ab, double ae,
              std::int64_t step, std::uint32_t stream = 7, MemKind mem = MemKind::none, std::uint64_t bytes = 0) {
    const std::uint64_t corr = next_corr++;
    t.calls.push_back({ns(cb), ns(ce), 0, t.intern(api), corr, step});
    DeviceActivity a;
    a.begin_ns = ns(ab);
    a.end_ns = ns(ae);
    a.stream = stream;
    a.kind = kind;
    a.name = t.intern(name);
    a.correlation = corr;
    a.bytes = bytes;
    a.host_mem = mem;
    a.step = step;
    t.activities.push_back(a);
  }
};

// A loop whose step k waits `wait_ms` for batch k (producers in `producer_role`), then launches a 20 ms kernel.
inline Trace input_bound(Role producer_role, int steps, double wait_ms, double cpu_fraction) {
  Builder b;
  double t = 0;
  for (int k = 0; k < steps; ++k) {
    const double s0 = t;
    b.range(Role::step, "step", s0, s0 + wait_ms + 0.2, k, k);
    b.range(Role::wait_batch, "wait_batch", s0, s0 + wait_ms, k, k);
    b.range(producer_role, producer_role == Role::retrieval ? "read" : "decode", s0, s0 + wait_ms, -1, k, 1,
            wait_ms * cpu_fraction);
    b.range(Role::submit, "submit", s0 + wait_ms, s0 + wait_ms + 0.2, k, k);
    b.launch("cudaLaunchKernel", s0 + wait_ms, s0 + wait_ms + 0.1, ActivityKind::kernel, "step_kernel", s0 + wait_ms + 0.1,
             s0 + wait_ms + 20.1, k);
    t = s0 + wait_ms + 20.1;  // the next step starts when the device finishes (no prefetch)
  }
  return b.t;
}

inline int count(const Report& r, Verdict v) {
  int n = 0;
  for (const StepDiagnosis& s : r.steps) n += !s.warmup && s.verdict == v;
  return n;
}

}  // namespace stalldx::diagnose::test_traces
