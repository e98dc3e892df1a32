#include "call_cause.h"

namespace stalldx::diagnose {

Cause call_cause(const TraceIndex& ix, const RuntimeCall& c, int copies_in_step) {
  switch (ix.kind(c)) {
    case ApiKind::synchronize: return Cause::synchronization;
    case ApiKind::host_allocation:
    case ApiKind::device_allocation: return Cause::host_allocation;
    case ApiKind::launch: return Cause::launch_rate;
    default: break;  // a copy is judged by the device records it made, below
  }
  if (auto it = ix.activities_by_corr.find(c.correlation); it != ix.activities_by_corr.end())
    for (std::size_t i : it->second) {
      const DeviceActivity& a = ix.trace.activities[i];
      if (is_memcpy(a.kind) && a.host_mem == MemKind::pageable) return Cause::pageable_copy;
      if (is_memcpy(a.kind) && copies_in_step > 1) return Cause::per_sample_copies;
    }
  return Cause::other_cuda_call;
}

bool submits_copy(const TraceIndex& ix, const HostRange& r) {
  for (const RuntimeCall* c : ix.consumer_calls) {
    if (c->begin_ns < r.begin_ns || c->end_ns > r.end_ns) continue;
    if (auto it = ix.activities_by_corr.find(c->correlation); it != ix.activities_by_corr.end())
      for (std::size_t i : it->second)
        if (ix.trace.activities[i].kind == ActivityKind::memcpy_h2d) return true;
  }
  return false;
}

}  // namespace stalldx::diagnose
