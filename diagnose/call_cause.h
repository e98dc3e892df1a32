// Internal: what a consumer's CUDA call or range says about the idle time it covered.
#pragma once

#include "trace_index.h"

namespace stalldx::diagnose {

// The submission cause of a runtime call, from what its API does (the kind of its name) and the device
// work it launched; `copies_in_step`: the step's memcpy records (several = per-sample copies).
Cause call_cause(const TraceIndex& ix, const RuntimeCall& c, int copies_in_step);
// True when a consumer call inside `r` launched a host-to-device copy.
bool submits_copy(const TraceIndex& ix, const HostRange& r);

}  // namespace stalldx::diagnose
