// A Trace built by hand for the step-inference tests: threads of one process, ranges and CUDA launches
// in milliseconds, each launch a call linked to its device record by a fresh correlation id.
#pragma once

#include <string>

#include "stalldx/trace_model.h"

namespace stalldx::record::testing {

struct Built {
  Trace t;
  explicit Built(int threads = 2) {
    for (int i = 0; i < threads; ++i) t.threads.push_back(ThreadInfo{static_cast<std::uint32_t>(i), 100 + i, i == 0 ? "main" : "worker", 0, 1, "p"});
  }
  void range(std::uint32_t thread, const std::string& name, double b, double e, Role role = Role::user) {
    HostRange r;
    r.begin_ns = static_cast<std::int64_t>(b * 1e6);
    r.end_ns = static_cast<std::int64_t>(e * 1e6);
    r.thread = thread;
    r.name = t.intern(name);
    r.role = role;
    t.ranges.push_back(r);
  }
  void launch(std::uint32_t thread, double at, ActivityKind kind, const std::string& name, std::uint64_t bytes = 0) {
    const std::uint64_t corr = t.calls.size() + 1;
    t.calls.push_back(RuntimeCall{static_cast<std::int64_t>(at * 1e6), static_cast<std::int64_t>((at + 0.01) * 1e6), thread,
                                  t.intern(kind == ActivityKind::kernel ? "cudaLaunchKernel" : "cudaMemcpyAsync"), corr});
    DeviceActivity a;
    a.begin_ns = static_cast<std::int64_t>((at + 0.02) * 1e6);
    a.end_ns = static_cast<std::int64_t>((at + 0.5) * 1e6);
    a.kind = kind;
    a.name = t.intern(name);
    a.bytes = bytes;
    a.correlation = corr;
    t.activities.push_back(a);
  }
  int steps() const {
    int n = 0;
    for (const HostRange& r : t.ranges) n += r.role == Role::step;
    return n;
  }
};

}  // namespace stalldx::record::testing
