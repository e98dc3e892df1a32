// The host's facts a diagnosis weighs advice against (how many CPUs a recorded program could use, how
// loaded the host was), read from this process: a recorded program inherits its recorder's affinity.
#pragma once

#include "stalldx/trace_model.h"

namespace stalldx {

// Online CPUs, the CPUs this process may run on (sched_getaffinity) and the 1-minute load now
// (load_1m_start); load_1m_end is left unknown (-1) for the caller to fill at the end.
HostFacts current_host_facts();
// The 1-minute load average now; -1 when it cannot be read.
double load_average_1m();

}  // namespace stalldx
