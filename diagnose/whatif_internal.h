// Internal: the what-if costs from an already built index and report (for the advice, which runs inside
// diagnose() and must not diagnose again). The report needs its steps and its summary's stall and
// producer figures filled.
#pragma once

#include "stalldx/diagnose/whatif.h"
#include "trace_index.h"

namespace stalldx::diagnose {

StageCosts stage_costs(const Trace& trace, const TraceIndex& index, const Report& report);

}  // namespace stalldx::diagnose
