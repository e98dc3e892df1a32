// The advice tests' loop builder and report queries (advice_test.cpp, advice_loader_test.cpp).
#pragma once

#include <map>
#include <string>

#include "diagnose_traces.h"
#include "stalldx/diagnose/diagnosis.h"

namespace stalldx::diagnose::advice_tests {

using test_traces::kMs;

// A loop of a recorded config on a host of `cpus` CPUs, no warm-up; call() launches device work of 1 MiB.
struct Loop : test_traces::Builder {
  explicit Loop(const std::map<std::string, std::string>& config, int cpus = 16) {
    t.meta.device.clear();
    t.meta.config = config;
    t.meta.config["warmup"] = "0";
    t.meta.host_facts = HostFacts{cpus, cpus, 0.5, 0.5};
  }
  void call(const char* api, double b, double e, std::int64_t step, ActivityKind kind, const char* name, double ab, double ae,
            MemKind mem = MemKind::none) {
    launch(api, b, e, kind, name, ab, ae, step, DeviceActivity{}.stream, mem, 1 << 20);
  }
  // Step k from time t: it waits `wait` ms for batch k (the caller adds the batch's producer range),
  // then launches a `kernel_ms` kernel. Returns when the next step begins.
  double waiting_step(std::int64_t k, double t, double wait, double kernel_ms) {
    range(Role::step, "step", t, t + wait + 0.2, k, k);
    range(Role::wait_batch, "wait_batch", t, t + wait, k, k);
    call("cudaLaunchKernel", t + wait, t + wait + 0.1, k, ActivityKind::kernel, "k", t + wait + 0.1, t + wait + 0.1 + kernel_ms);
    return t + wait + 0.1 + kernel_ms;
  }
};

inline bool has(const Report& r, Advice a) {
  for (const Advised& x : r.summary.advice)
    if (x.kind == a) return true;
  return false;
}

inline std::string all(const Report& r) {
  std::string s;
  for (const Advised& x : r.summary.advice) s += x.text + "\n";
  return s;
}

}  // namespace stalldx::diagnose::advice_tests
